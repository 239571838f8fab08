import MeshCrypto

/// The relay topics two devices pair on when they have no network path to each other: derived
/// from the pairing code's public hint alone (docs/PAIRING.md, "Pairing without an address").
///
/// ```
/// rendezvous = prefix || base32(HMAC-SHA-256(key = "SessionMesh relay rendezvous v1",
///                                            hint (2 ASCII bytes) || role || day u32 BE)[0..<20])
/// role       = 0x01 joiner to inviter, 0x02 inviter to joiner
/// ```
///
/// The hint is already public (the inviter advertises it on the LAN), and the five secret
/// characters never enter the topic, so the topic gives the broker nothing to test a guess
/// against: what crosses it is the CPace exchange, which allows one online guess per attempt
/// and none offline. Two live codes with the same hint (1 in 1024) share a topic; each joiner's
/// random path ID keeps their exchanges apart, and a wrong inviter costs the joiner one failed
/// guess, as on the LAN.
public struct RelayRendezvousTopics: Sendable {
    static let key = SecretBytes(Array("SessionMesh relay rendezvous v1".utf8))

    /// The prefix every topic starts with.
    public let prefix: RelayTopicPrefix
    private let hint: [UInt8]

    /// The rendezvous of the code whose public hint is `hint` (``PairingCode/publicHint``).
    /// Nil unless `hint` is ``PairingCode/publicHintLength`` ASCII letters or digits.
    public init?(prefix: RelayTopicPrefix, hint: String) {
        let bytes = Array(hint.utf8)
        guard bytes.count == PairingCode.publicHintLength,
              bytes.allSatisfy({ (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) }) else { return nil }
        self.prefix = prefix
        self.hint = bytes
    }

    /// Where the joiner publishes on `day`, and the inviter listens (with the day before's).
    public func joinerToInviter(day: UInt32) -> String { topic(role: 0x01, day: day) }

    /// Where the inviter publishes on `day`, and the joiner listens (with the day before's).
    public func inviterToJoiner(day: UInt32) -> String { topic(role: 0x02, day: day) }

    /// The topics the inviter subscribes to on `day`: today's and yesterday's joiner topics.
    public func inviterSubscriptions(day: UInt32) -> [String] { RelayDay.accepted(at: day).map(joinerToInviter) }

    /// The topics the joiner subscribes to on `day`: today's and yesterday's inviter topics.
    public func joinerSubscriptions(day: UInt32) -> [String] { RelayDay.accepted(at: day).map(inviterToJoiner) }

    private func topic(role: UInt8, day: UInt32) -> String {
        var message = WireWriter(capacity: 7)
        message.raw(hint)
        message.u8(role)
        message.u32(day)
        return prefix.text + RelayTopicName.encode(PairingSupport.hmacSHA256(key: Self.key, message: message.bytes))
    }
}
