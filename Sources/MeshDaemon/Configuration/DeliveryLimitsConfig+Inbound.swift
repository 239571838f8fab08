/// The `inbound_max_*` keys: how much paired peers can make the store hold (``PeerStateLimits``).
extension DeliveryLimitsConfig {
    /// The keys: a peer's share of the inbox (items, bytes); then per peer and in total: slots
    /// (count, bytes), session rows, timer anchors.
    static let inboundKeys = ["inbox_max_items_per_peer", "inbox_max_bytes_per_peer", "inbox_expire_unattached_after", "inbound_max_slots_per_peer", "inbound_max_slot_bytes_per_peer", "inbound_max_slots",
                              "inbound_max_slot_bytes", "inbound_max_sessions_per_peer", "inbound_max_sessions",
                              "inbound_max_anchors_per_peer", "inbound_max_anchors", "session_handover_grace"]

    /// Largest count accepted by the `inbound_max_*` count keys (the stored rows are read back
    /// in full only at open, to count them).
    public static let maximumInboundRows = 10_000_000
    /// Largest `inbox_expire_unattached_after` (10 years, in seconds).
    public static let maximumExpirySeconds = 10 * 365 * 86_400
    /// Largest `session_handover_grace` (a week, in seconds).
    public static let maximumHandOverGraceSeconds = 7 * 86_400

    static func inboundLimit(_ key: String, _ value: ConfigFileParser.Value) throws(ConfigurationError) -> Int {
        if key == "inbox_max_items_per_peer" { return try integer(value, 1...maximumItems, "items") }
        if key == "inbox_expire_unattached_after" { return try integer(value, 0...maximumExpirySeconds, "seconds") }
        if key == "session_handover_grace" { return try integer(value, 0...maximumHandOverGraceSeconds, "seconds") }
        return key.hasSuffix("bytes") || key.hasSuffix("bytes_per_peer")
            ? try integer(value, minimumBytes...maximumBytes, "bytes")
            : try integer(value, 1...maximumInboundRows, "rows")
    }

    /// `options` with the inbox share applied: the key's value, else half of the inbox (set or default).
    func applyInboxShare(to options: inout DeliveryStoreOptions) {
        options.maxInboxItemsPerPeer = inboundLimits["inbox_max_items_per_peer"] ?? max(1, options.maxInboxItems / 2)
        options.maxInboxBytesPerPeer = inboundLimits["inbox_max_bytes_per_peer"] ?? max(1, options.maxInboxBytes / 2)
    }

    /// A peer's share of the inbox set above the inbox itself: the key and what is wrong.
    func inboxShareConflict(_ options: DeliveryStoreOptions) -> (key: String, message: String)? {
        if inboundLimits["inbox_max_items_per_peer"] != nil, options.maxInboxItemsPerPeer > options.maxInboxItems {
            return ("inbox_max_items_per_peer", "inbox_max_items_per_peer (\(options.maxInboxItemsPerPeer)) must not exceed inbox_max_items (\(options.maxInboxItems))")
        }
        if inboundLimits["inbox_max_bytes_per_peer"] != nil, options.maxInboxBytesPerPeer > options.maxInboxBytes {
            return ("inbox_max_bytes_per_peer", "inbox_max_bytes_per_peer (\(options.maxInboxBytesPerPeer)) must not exceed inbox_max_bytes (\(options.maxInboxBytes))")
        }
        return nil
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
