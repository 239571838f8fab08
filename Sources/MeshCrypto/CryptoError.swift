/// An error from the crypto layer: what failed, in words a person can act on.
///
/// Compare ``code`` to tell failures apart (`error.code == .rekeyRequired`); ``description``
/// carries the detail. Messages never contain key material, codes or payloads.
public struct CryptoError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The kind of failure. New kinds may be added; switch with a `default`.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }

        /// The human-readable name of this kind.
        public var description: String { name }

        /// libsodium could not be initialised (no usable randomness source).
        public static let libsodiumUnavailable = Code("libsodium unavailable")
        /// A key, nonce or share has the wrong length or is not a valid curve point.
        public static let invalidKey = Code("invalid key")
        /// Authenticated decryption failed: the data was forged, corrupted or sealed with another key.
        public static let authenticationFailed = Code("authentication failed")
        /// A message is too short, too long or otherwise not in the expected wire format.
        public static let malformedMessage = Code("malformed message")
        /// A datagram counter was already accepted (a replay or a duplicate).
        public static let replayedCounter = Code("replayed counter")
        /// A datagram counter is older than the replay window.
        public static let counterTooOld = Code("counter too old")
        /// The sending counter reached its limit: the channel must be rekeyed before sending more.
        public static let rekeyRequired = Code("rekey required")
        /// A joined stream message would exceed the configured maximum size.
        public static let messageTooLarge = Code("message too large")
        /// An operation was called in the wrong state (e.g. writing when it is the peer's turn).
        public static let invalidState = Code("invalid state")
        /// The Noise protocol name is not one this implementation supports.
        public static let unsupportedProtocol = Code("unsupported protocol")
        /// A Diffie-Hellman or CPace result was the identity / all zero (a malicious share).
        public static let weakSharedSecret = Code("weak shared secret")
        /// The key file is readable or writable by group or others.
        public static let insecureKeyFile = Code("insecure key file")
        /// The key file is truncated or corrupt.
        public static let corruptKeyFile = Code("corrupt key file")
        /// Reading or writing the key file failed at the operating-system level.
        public static let keyFileIO = Code("key file I/O error")
        /// A pairing code typed by a person is not valid.
        public static let invalidPairingCode = Code("invalid pairing code")
        /// A test-vector file could not be read or understood.
        public static let invalidVectorFile = Code("invalid vector file")
    }

    /// The kind of failure.
    public let code: Code
    /// What failed and, where useful, what to do about it.
    public let message: String

    /// Creates an error of kind `code` with a human-readable `message`.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// "<kind>: <message>".
    public var description: String { "\(code): \(message)" }
}
