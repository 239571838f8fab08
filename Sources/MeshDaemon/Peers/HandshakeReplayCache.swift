/// The `HandshakeMac`s of the last message 1s one paired device's key made, so a copy of one is
/// refused before it costs any X25519 or a token of the handshake budgets.
///
/// An initiator makes a fresh ephemeral key, so a fresh MAC, for every message 1: a MAC seen
/// before is a replay, whoever sends it. The cache holds the last `capacity` MACs (oldest
/// forgotten first; 16 bytes each plus the set's overhead, about 48 KiB per device at the
/// default), so it stays a fixed size however many are replayed; a replay of a message 1 older
/// than that, or one recorded before a restart (the cache lives in memory), costs one answer at
/// most and is then refused by the timestamp rule (the device's latest confirmed timestamp is
/// kept in the paired-device store) and remembered here again.
struct HandshakeReplayCache: Sendable {
    /// MACs remembered per device.
    static let defaultCapacity = 1024

    /// A 16-byte MAC as two words (no allocation per entry).
    private struct Tag: Hashable, Sendable {
        let high: UInt64
        let low: UInt64

        init(_ bytes: [UInt8]) {
            var high: UInt64 = 0, low: UInt64 = 0
            for (index, byte) in bytes.prefix(16).enumerated() {
                if index < 8 { high = high << 8 | UInt64(byte) } else { low = low << 8 | UInt64(byte) }
            }
            self.high = high ^ UInt64(bytes.count) << 56
            self.low = low
        }
    }

    let capacity: Int
    private var ring: [Tag] = []
    private var next = 0
    private var seen: Set<Tag> = []

    init(capacity: Int = HandshakeReplayCache.defaultCapacity) {
        self.capacity = max(1, capacity)
    }

    /// MACs remembered now.
    var count: Int { ring.count }

    /// Whether `mac` (16 bytes) is new; remembers it if so (forgetting the oldest when full).
    mutating func admit(_ mac: [UInt8]) -> Bool {
        let tag = Tag(mac)
        guard seen.insert(tag).inserted else { return false }
        if ring.count < capacity {
            ring.append(tag)
        } else {
            seen.remove(ring[next])
            ring[next] = tag
            next = (next + 1) % capacity
        }
        return true
    }
}
