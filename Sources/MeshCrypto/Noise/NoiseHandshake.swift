/// A Noise handshake (spec §5.3) for `Noise_<pattern>_25519_ChaChaPoly_SHA256`, driven by the
/// pattern's token table.
///
/// Supported: the one-way patterns N, K, X; the interactive NN…IX; the deferred patterns
/// (NK1, X1X1, …); and `psk` modifiers at any position, several at once (`NNpsk0+psk2`).
/// The channel uses `Noise_IKpsk2_25519_ChaChaPoly_SHA256`.
///
/// Usage: both sides call ``writeMessage(payload:)`` / ``readMessage(_:)`` in turn until
/// ``isComplete``; then ``channelKeys()`` (or ``split()`` for the raw Noise cipher states).
/// Any failure (a forged message, a missing key) leaves the handshake unusable: start a new one.
/// Payloads are encrypted only once a key is mixed in; the pattern decides when (see the spec's
/// payload security properties).
public struct NoiseHandshake: Sendable {
    /// The longest Noise message (spec §3).
    public static let maximumMessageLength = 65_535

    let pattern: NoisePattern
    let isInitiator: Bool
    private var symmetric: NoiseSymmetricState
    private var localStatic: X25519KeyPair?
    private var localEphemeral: X25519KeyPair?
    private var presetEphemeral: X25519KeyPair?
    /// Where a fresh ephemeral's private key comes from.
    private let random: any RandomSource
    private var remoteEphemeral: [UInt8]?
    private var remoteStatic: [UInt8]?
    private var preSharedKeys: [SecretBytes]
    private var pskIndex = 0
    private var messageIndex = 0
    private var failed = false

    /// Starts a handshake.
    ///
    /// - Parameters:
    ///   - protocolName: e.g. `Noise_IKpsk2_25519_ChaChaPoly_SHA256`; other DH, cipher or hash
    ///     names throw ``CryptoError/Code/unsupportedProtocol``.
    ///   - initiator: whether this side sends the first message.
    ///   - prologue: data both sides must agree on (mixed into the hash, never sent).
    ///   - localStatic: this side's long-term key, when the pattern uses it.
    ///   - localEphemeral: a fixed ephemeral for test vectors only; a fresh one is generated otherwise.
    ///   - remoteStatic: the peer's static key, when known in advance (pre-message `s`).
    ///   - preSharedKeys: the 32-byte psks in the order the pattern's `psk` tokens use them.
    ///   - random: where a fresh ephemeral comes from (libsodium's generator unless a test
    ///     injects a seeded one).
    /// - Throws: ``CryptoError`` when the name is unsupported or a key the pre-messages need is missing.
    public init(protocolName: String, initiator: Bool, prologue: [UInt8] = [],
                localStatic: X25519KeyPair? = nil, localEphemeral: X25519KeyPair? = nil,
                remoteStatic: [UInt8]? = nil, preSharedKeys: [SecretBytes] = [],
                random: any RandomSource = SodiumRandomSource()) throws {
        let parts = protocolName.split(separator: "_", omittingEmptySubsequences: false)
        guard parts.count == 5, parts[0] == "Noise" else {
            throw CryptoError(.unsupportedProtocol, "'\(protocolName)' is not a Noise protocol name")
        }
        guard parts[2] == "25519", parts[3] == "ChaChaPoly", parts[4] == "SHA256" else {
            throw CryptoError(.unsupportedProtocol,
                              "'\(protocolName)': only 25519, ChaChaPoly and SHA256 are supported")
        }
        guard let pattern = NoisePattern.named(String(parts[1])) else {
            throw CryptoError(.unsupportedProtocol, "'\(protocolName)': handshake pattern '\(parts[1])' is not supported")
        }
        if let remoteStatic, remoteStatic.count != Sodium.x25519Length {
            throw CryptoError(.invalidKey, "the remote static key must be 32 bytes")
        }
        self.pattern = pattern
        self.isInitiator = initiator
        self.symmetric = NoiseSymmetricState(protocolName: protocolName)
        self.localStatic = localStatic
        self.presetEphemeral = localEphemeral
        self.random = random
        self.remoteStatic = remoteStatic
        self.preSharedKeys = preSharedKeys
        symmetric.mixHash(prologue)
        try mixPreMessage(pattern.initiatorPreMessage, ownedByUs: initiator)
        try mixPreMessage(pattern.responderPreMessage, ownedByUs: !initiator)
    }

    private mutating func mixPreMessage(_ tokens: [NoiseToken], ownedByUs: Bool) throws {
        for token in tokens {
            guard token == .s else { continue }  // no supported pattern has a pre-message `e`
            let key = ownedByUs ? localStatic?.publicKey : remoteStatic
            guard let key else {
                throw CryptoError(.invalidState, ownedByUs
                    ? "the pattern needs this side's static key before the handshake"
                    : "the pattern needs the peer's static key before the handshake")
            }
            symmetric.mixHash(key)
        }
    }

    /// Sets (or replaces) the psks. A responder that learns the initiator's static key from
    /// message 1 (IKpsk2) looks the psk up then, and calls this before writing message 2.
    public mutating func setPreSharedKeys(_ psks: [SecretBytes]) {
        preSharedKeys = psks
    }

    /// Whether every handshake message has been written or read.
    public var isComplete: Bool { messageIndex == pattern.messages.count && !failed }

    /// The peer's static public key, once known (from a pre-message or a received `s`).
    public var remoteStaticPublicKey: [UInt8]? { remoteStatic }

    /// The handshake hash `h`; after completion a unique, public channel-binding value.
    public var handshakeHash: [UInt8] { symmetric.handshakeHash }

    /// Whether this side writes the next message.
    public var isOurTurn: Bool { (messageIndex % 2 == 0) == isInitiator && messageIndex < pattern.messages.count }

    /// Writes the next handshake message, carrying `payload` (encrypted once a key is mixed in).
    /// Throws ``CryptoError/Code/invalidState`` when it is not this side's turn, the handshake is
    /// over or failed, or a key the pattern needs is missing.
    public mutating func writeMessage(payload: [UInt8]) throws -> [UInt8] {
        try requireUsable()
        guard isOurTurn else { throw CryptoError(.invalidState, "it is the peer's turn to send a handshake message") }
        do {
            var buffer: [UInt8] = []
            for token in pattern.messages[messageIndex] {
                switch token {
                case .e:
                    let ephemeral = presetEphemeral ?? X25519KeyPair.generate(using: random)
                    presetEphemeral = nil
                    localEphemeral = ephemeral
                    buffer += ephemeral.publicKey
                    symmetric.mixHash(ephemeral.publicKey)
                    if pattern.usesPreSharedKeys { symmetric.mixKey(SecretBytes(ephemeral.publicKey)) }
                case .s:
                    guard let localStatic else { throw CryptoError(.invalidState, "the pattern sends this side's static key, but none was given") }
                    buffer += try symmetric.encryptAndHash(localStatic.publicKey)
                case .psk:
                    try mixNextPreSharedKey()
                case .ee, .es, .se, .ss:
                    try mixDiffieHellman(token)
                }
            }
            let sealedPayload = try symmetric.encryptAndHash(payload)
            buffer += sealedPayload
            guard buffer.count <= Self.maximumMessageLength else {
                throw CryptoError(.malformedMessage, "handshake message would exceed 65 535 bytes; send a shorter payload")
            }
            messageIndex += 1
            return buffer
        } catch {
            failed = true
            throw error
        }
    }

    /// Reads the peer's next handshake message and returns its payload.
    /// Throws ``CryptoError`` on a short, long or forged message (the handshake is then unusable),
    /// or when it is not the peer's turn.
    public mutating func readMessage(_ message: [UInt8]) throws -> [UInt8] {
        try requireUsable()
        guard !isOurTurn, messageIndex < pattern.messages.count else {
            throw CryptoError(.invalidState, "no handshake message from the peer is expected now")
        }
        guard message.count <= Self.maximumMessageLength else {
            throw CryptoError(.malformedMessage, "handshake message longer than 65 535 bytes")
        }
        do {
            var offset = 0
            func take(_ count: Int) throws -> [UInt8] {
                guard message.count - offset >= count else {
                    throw CryptoError(.malformedMessage, "handshake message is truncated")
                }
                defer { offset += count }
                return Array(message[offset..<(offset + count)])
            }
            for token in pattern.messages[messageIndex] {
                switch token {
                case .e:
                    let ephemeral = try take(Sodium.x25519Length)
                    remoteEphemeral = ephemeral
                    symmetric.mixHash(ephemeral)
                    if pattern.usesPreSharedKeys { symmetric.mixKey(SecretBytes(ephemeral)) }
                case .s:
                    let length = Sodium.x25519Length + (symmetric.cipher.hasKey ? Sodium.aeadTagLength : 0)
                    remoteStatic = try symmetric.decryptAndHash(try take(length))
                case .psk:
                    try mixNextPreSharedKey()
                case .ee, .es, .se, .ss:
                    try mixDiffieHellman(token)
                }
            }
            let payload = try symmetric.decryptAndHash(Array(message[offset...]))
            messageIndex += 1
            return payload
        } catch {
            failed = true
            throw error
        }
    }

    private func requireUsable() throws {
        guard !failed else { throw CryptoError(.invalidState, "this handshake failed earlier; start a new one") }
    }

    private mutating func mixNextPreSharedKey() throws {
        guard pskIndex < preSharedKeys.count else {
            throw CryptoError(.invalidState, "the pattern needs a pre-shared key that was not set")
        }
        let psk = preSharedKeys[pskIndex]
        guard psk.count == 32 else { throw CryptoError(.invalidKey, "a Noise psk is 32 bytes") }
        pskIndex += 1
        symmetric.mixKeyAndHash(psk)
    }

    /// `ee`, `es`, `se`, `ss`: the first letter names the initiator's key, the second the responder's.
    private mutating func mixDiffieHellman(_ token: NoiseToken) throws {
        let initiatorKeyIsEphemeral = token == .ee || token == .es
        let responderKeyIsEphemeral = token == .ee || token == .se
        let ownIsEphemeral = isInitiator ? initiatorKeyIsEphemeral : responderKeyIsEphemeral
        let peerIsEphemeral = isInitiator ? responderKeyIsEphemeral : initiatorKeyIsEphemeral
        guard let own = ownIsEphemeral ? localEphemeral : localStatic else {
            throw CryptoError(.invalidState, "the pattern needs this side's \(ownIsEphemeral ? "ephemeral" : "static") key")
        }
        guard let peer = peerIsEphemeral ? remoteEphemeral : remoteStatic else {
            throw CryptoError(.invalidState, "the pattern needs the peer's \(peerIsEphemeral ? "ephemeral" : "static") key")
        }
        symmetric.mixKey(try Sodium.x25519(privateKey: own.privateKey, publicKey: peer))
    }

    /// After completion: the two transport cipher states,
    /// (initiator→responder, responder→initiator). For one-way patterns only the first is used.
    public mutating func split() throws -> (NoiseCipherState, NoiseCipherState) {
        let (first, second) = try transportKeys()
        return (NoiseCipherState(key: first), NoiseCipherState(key: second))
    }

    func transportKeys() throws -> (SecretBytes, SecretBytes) {
        guard isComplete else { throw CryptoError(.invalidState, "the handshake is not complete") }
        return symmetric.splitKeys()
    }
}
