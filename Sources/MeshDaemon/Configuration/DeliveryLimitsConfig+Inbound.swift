/// The `inbound_max_*` keys: how much paired peers can make the store hold (``PeerStateLimits``).
extension DeliveryLimitsConfig {
    /// The keys, per peer then in total: slots (count, bytes), session rows, timer anchors.
    static let inboundKeys = ["inbound_max_slots_per_peer", "inbound_max_slot_bytes_per_peer", "inbound_max_slots",
                              "inbound_max_slot_bytes", "inbound_max_sessions_per_peer", "inbound_max_sessions",
                              "inbound_max_anchors_per_peer", "inbound_max_anchors"]

    /// Largest count accepted by the `inbound_max_*` count keys (the stored rows are read back
    /// in full only at open, to count them).
    public static let maximumInboundRows = 10_000_000

    static func inboundLimit(_ key: String, _ value: ConfigFileParser.Value) throws(ConfigurationError) -> Int {
        key.hasSuffix("bytes") || key.hasSuffix("bytes_per_peer")
            ? try integer(value, minimumBytes...maximumBytes, "bytes")
            : try integer(value, 1...maximumInboundRows, "rows")
    }

    /// `limits` with every `inbound_max_*` key this file sets applied.
    func applyInboundLimits(to limits: inout PeerStateLimits) {
        for (key, value) in inboundLimits {
            switch key {
            case "inbound_max_slots_per_peer": limits.slotsPerPeer = value
            case "inbound_max_slot_bytes_per_peer": limits.slotBytesPerPeer = value
            case "inbound_max_slots": limits.slots = value
            case "inbound_max_slot_bytes": limits.slotBytes = value
            case "inbound_max_sessions_per_peer": limits.sessionsPerPeer = value
            case "inbound_max_sessions": limits.sessions = value
            case "inbound_max_anchors_per_peer": limits.anchorsPerPeer = value
            case "inbound_max_anchors": limits.anchors = value
            default: break
            }
        }
    }
}
