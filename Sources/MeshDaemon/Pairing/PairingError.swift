import MeshCore

/// Why a pairing attempt failed, in words a person can act on.
///
/// Compare ``code`` to tell kinds apart (`error.code == .malformed`), or compare whole values
/// (`error == .wrongCode`). ``description`` never contains the code, a key or a name.
///
/// On the inviter, every thrown `PairingError` ends the attempt: the caller closes the
/// connection and calls ``PairingInvitationState/attemptFailed()``.
public struct PairingError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The kind of failure. New kinds may be added; switch with a `default`.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }

        /// The kind's name, e.g. "wrong code".
        public var description: String { name }

        /// Key confirmation failed: the two sides did not use the same pairing code.
        public static let wrongCode = Code("wrong code")
        /// A message was truncated, oversized or had a bad field.
        public static let malformed = Code("malformed message")
        /// A well-formed message arrived at the wrong time or with unexpected content.
        public static let protocolViolation = Code("protocol violation")
        /// The peer speaks a pairing protocol version this build does not.
        public static let unsupportedVersion = Code("unsupported version")
        /// The other device knew the code but did not prove that it holds the private key of the
        /// public key it presented.
        public static let unprovenKey = Code("unproven key")
        /// This device's own identity (key or name) cannot be sent.
        public static let invalidIdentity = Code("invalid identity")
    }

    /// The kind of failure.
    public let code: Code
    /// What exactly failed (a field name, a limit); empty for ``wrongCode``.
    public let detail: String

    private init(_ code: Code, _ detail: String) {
        self.code = code
        self.detail = detail
    }

    /// The other side's key confirmation did not verify: the codes differ (a typo that the
    /// check character missed is impossible, so: a different code, or someone guessing).
    public static let wrongCode = PairingError(.wrongCode, "")

    /// The other side's proof of possession of its static key did not verify: whoever knew the
    /// code presented a public key whose private key it does not hold (another device's key).
    public static let unprovenKey = PairingError(.unprovenKey, "")

    /// The peer speaks a different pairing protocol version.
    public static let unsupportedVersion = PairingError(.unsupportedVersion, "")

    /// A message that does not parse; `what` names the message and field.
    public static func malformed(_ what: String) -> PairingError {
        PairingError(.malformed, what)
    }

    /// A message that parses but is not acceptable now; `what` says why.
    public static func protocolViolation(_ what: String) -> PairingError {
        PairingError(.protocolViolation, what)
    }

    /// This device's identity cannot be used for pairing; `what` says which part and why.
    public static func invalidIdentity(_ what: String) -> PairingError {
        PairingError(.invalidIdentity, what)
    }

    /// A sentence for logs and for the user. Never contains a secret.
    public var description: String {
        switch code {
        case .wrongCode:
            return "pairing failed: the pairing code did not match on the other device; check the code and try again"
        case .unsupportedVersion:
            return "pairing failed: the other device speaks a pairing protocol version this one does not support; update SessionMesh on both devices"
        case .unprovenKey:
            return "pairing failed: the other device knew the code but did not prove that it holds the private key of the identity it presented (it may be posing as another device); nothing was stored"
        case .malformed:
            return "pairing failed: malformed pairing message: \(detail)"
        case .protocolViolation:
            return "pairing failed: pairing protocol violation: \(detail)"
        case .invalidIdentity:
            return "this device's identity cannot be used for pairing: \(detail)"
        default:
            return "pairing failed: \(code): \(detail)"
        }
    }

    /// The failure the control plane reports for this one (`pairingFailed` with this text; the
    /// canonical ``MeshError/pairingFailed`` for a wrong code).
    public var controlError: MeshError {
        if self == .wrongCode { return .pairingFailed }
        return MeshError(.pairingFailed, description)
    }
}
