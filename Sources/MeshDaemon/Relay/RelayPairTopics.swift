import MeshCrypto

/// The relay topics of one pair, seen from this device: where it publishes to the peer and
/// where it listens for the peer, for the live channel (rotated every UTC day) and for the
/// store-and-forward mailbox (fixed).
///
/// ```
/// topic_key = HKDF-SHA-256(ikm = pair key, salt = "SessionMesh relay topic v1",
///                          info = lower public key || higher public key, 32 bytes)
/// channel   = prefix || base32(HMAC-SHA-256(topic_key, "channel" || direction || day u32 BE)[0..<20])
/// mailbox   = prefix || base32(HMAC-SHA-256(topic_key, "mailbox" || direction)[0..<20])
/// direction = 0x01 from the byte-wise lower static public key to the higher one, 0x02 back
/// ```
///
/// Only the two devices hold the pair key, so the broker sees names it cannot link to a device
/// ID, a public key or to the same pair's names of other days; it still sees which accounts
/// publish and subscribe to each name (docs/RELAY.md, "What the broker learns").
public struct RelayPairTopics: Sendable {
    static let salt = Array("SessionMesh relay topic v1".utf8)
    static let channelLabel = Array("channel".utf8)
    static let mailboxLabel = Array("mailbox".utf8)

    /// The prefix every topic starts with.
    public let prefix: RelayTopicPrefix
    private let topicKey: SecretBytes
    /// The direction byte of messages this device sends (the peer's is the other one).
    let outboundDirection: UInt8

    /// The topics between this device (`ownPublicKey`) and a paired device (`peerPublicKey`)
    /// that share `pairKey`. Nil when a key is not 32 bytes or the two public keys are equal
    /// (no such pair exists).
    public init?(prefix: RelayTopicPrefix, pairKey: SecretBytes, ownPublicKey: [UInt8], peerPublicKey: [UInt8]) {
        guard ownPublicKey.count == 32, peerPublicKey.count == 32, pairKey.count == 32,
              ownPublicKey != peerPublicKey else { return nil }
        let ownIsLower = ownPublicKey.lexicographicallyPrecedes(peerPublicKey)
        let ordered = ownIsLower ? ownPublicKey + peerPublicKey : peerPublicKey + ownPublicKey
        self.prefix = prefix
        topicKey = PairingSupport.hkdfSHA256(secret: pairKey, salt: Self.salt, info: ordered, count: 32)
        outboundDirection = ownIsLower ? 0x01 : 0x02
    }

    private var inboundDirection: UInt8 { outboundDirection == 0x01 ? 0x02 : 0x01 }

    /// Where this device publishes channel messages to the peer on `day` (``RelayDay``).
    public func outboundChannel(day: UInt32) -> String {
        channel(direction: outboundDirection, day: day)
    }

    /// Where this device listens for the peer's channel messages on `day`: that day's topic
    /// and the day before's (``RelayDay/accepted(at:)``), today's first.
    public func inboundChannel(day: UInt32) -> [String] {
        RelayDay.accepted(at: day).map { channel(direction: inboundDirection, day: $0) }
    }

    /// Where this device leaves store-and-forward items (and acks) for the peer.
    public var outboundMailbox: String { mailbox(direction: outboundDirection) }

    /// Where the peer leaves store-and-forward items (and acks) for this device; subscribed to
    /// in a persistent session so the broker keeps them while this device is away.
    public var inboundMailbox: String { mailbox(direction: inboundDirection) }

    private func channel(direction: UInt8, day: UInt32) -> String {
        var message = WireWriter(capacity: 12)
        message.raw(Self.channelLabel)
        message.u8(direction)
        message.u32(day)
        return topic(message.bytes)
    }

    private func mailbox(direction: UInt8) -> String {
        topic(Self.mailboxLabel + [direction])
    }

    private func topic(_ message: [UInt8]) -> String {
        prefix.text + RelayTopicName.encode(PairingSupport.hmacSHA256(key: topicKey, message: message))
    }
}
