/// The `HandshakeMac`s of the last message 1s one paired device's key made, so a copy of one is
/// refused before it costs any X25519 or a token of the handshake budgets.
///
/// An initiator makes a fresh ephemeral key, so a fresh MAC, for every message 1: a MAC seen
/// before is a replay, whoever sends it. The cache holds the last `capacity` MACs (oldest
/// forgotten first), so it stays a fixed size however many are replayed; a replay of a message 1
/// older than that, or one recorded before a restart (the cache lives in memory), costs one
/// answer at most and is then refused by the timestamp rule (the device's latest confirmed
/// timestamp is kept in the paired-device store) and remembered here again.
struct HandshakeReplayCache: Sendable {
    /// MACs remembered per device.
    static let defaultCapacity = 64

    let capacity: Int
    private var order: [[UInt8]] = []
    private var seen: Set<[UInt8]> = []

    init(capacity: Int = HandshakeReplayCache.defaultCapacity) {
        self.capacity = max(1, capacity)
    }

    /// MACs remembered now.
    var count: Int { order.count }

    /// Whether `mac` is new; remembers it if so (forgetting the oldest when full).
    mutating func admit(_ mac: [UInt8]) -> Bool {
        guard seen.insert(mac).inserted else { return false }
        order.append(mac)
        if order.count > capacity { seen.remove(order.removeFirst()) }
        return true
    }
}
