/// The keys of one channel after its handshake, per path and per direction, oriented for this side.
///
/// Derivation, from the Noise `Split()` keys `k_ir` (initiator→responder) and `k_ri`:
///
///     key(path, direction) = HMAC-SHA-256(k_direction, "SessionMesh v1 <path>" || 0x01)
///
/// which is HKDF-Expand (RFC 5869) with the split key as PRK and a distinct label per path
/// (`datagram`, `stream`). The two paths never share a key or a nonce space.
///
/// Rekeying: the channel's normal rekey is a fresh handshake on ``RekeyPolicy``'s timers (new
/// ephemerals, so forward secrecy). ``rekeyed()`` is a cheap one-way ratchet of the same keys for
/// when that is not possible; both sides must switch at the same, agreed point.
public struct ChannelKeys: Sendable {
    /// Seals datagrams this side sends.
    public var datagramSender: DatagramSealer
    /// Opens datagrams from the peer.
    public var datagramReceiver: DatagramOpener
    /// Seals stream messages this side sends.
    public var streamSender: StreamSealer
    /// Opens stream frames from the peer.
    public var streamReceiver: StreamOpener
    /// 0 for keys straight from a handshake, +1 per ``rekeyed()``.
    public let generation: UInt64

    private let sendingRoot: SecretBytes
    private let receivingRoot: SecretBytes
    private let policy: RekeyPolicy

    /// Builds the keys for one side from the split keys.
    init(initiatorToResponder: SecretBytes, responderToInitiator: SecretBytes, isInitiator: Bool,
         policy: RekeyPolicy = .wireGuard) {
        self.init(sendingRoot: isInitiator ? initiatorToResponder : responderToInitiator,
                  receivingRoot: isInitiator ? responderToInitiator : initiatorToResponder,
                  generation: 0, policy: policy)
    }

    private init(sendingRoot: SecretBytes, receivingRoot: SecretBytes, generation: UInt64, policy: RekeyPolicy) {
        self.sendingRoot = sendingRoot
        self.receivingRoot = receivingRoot
        self.generation = generation
        self.policy = policy
        datagramSender = DatagramSealer(key: Self.derive(sendingRoot, label: "datagram"), policy: policy)
        datagramReceiver = DatagramOpener(key: Self.derive(receivingRoot, label: "datagram"), policy: policy)
        streamSender = StreamSealer(key: Self.derive(sendingRoot, label: "stream"), policy: policy)
        streamReceiver = StreamOpener(key: Self.derive(receivingRoot, label: "stream"), policy: policy)
    }

    /// The next generation: every key replaced by a one-way function of itself, counters and
    /// replay windows reset. Both peers must call it at the same agreed point (e.g. a generation
    /// bit in the caller's header); packets sealed with the old generation no longer open.
    public func rekeyed() -> ChannelKeys {
        ChannelKeys(sendingRoot: Self.derive(sendingRoot, label: "rekey"),
                    receivingRoot: Self.derive(receivingRoot, label: "rekey"),
                    generation: generation + 1, policy: policy)
    }

    /// HKDF-Expand(prk, "SessionMesh v1 " + label, 32).
    static func derive(_ key: SecretBytes, label: String) -> SecretBytes {
        let info = Array("SessionMesh v1 \(label)".utf8) + [0x01]
        return SecretBytes(count: 32) { out in
            key.withUnsafeBytes { k in info.withUnsafeBytes { Sodium.hmacSHA256(key: k, [$0], into: out) } }
        }
    }
}

extension NoiseHandshake {
    /// After completion: the channel's per-path, per-direction keys, oriented for this side.
    /// Throws ``CryptoError/Code/invalidState`` before the handshake completes.
    public func channelKeys() throws -> ChannelKeys {
        let (initiatorToResponder, responderToInitiator) = try transportKeys()
        return ChannelKeys(initiatorToResponder: initiatorToResponder, responderToInitiator: responderToInitiator,
                           isInitiator: isInitiator)
    }

    /// Like ``channelKeys()`` with a custom rekey policy (tests use small message limits).
    func channelKeys(policy: RekeyPolicy) throws -> ChannelKeys {
        let (initiatorToResponder, responderToInitiator) = try transportKeys()
        return ChannelKeys(initiatorToResponder: initiatorToResponder, responderToInitiator: responderToInitiator,
                           isInitiator: isInitiator, policy: policy)
    }
}
