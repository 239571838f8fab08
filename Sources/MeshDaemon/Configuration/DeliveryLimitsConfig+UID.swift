/// The `uid_max_*` keys: how much of the outbox, of the outbound slots and of this device's
/// session rows and timer anchors one local uid's apps may fill
/// (``DeliveryStoreOptions/maxOutboxItemsPerUID``, docs/CONFIG.md).
extension DeliveryLimitsConfig {
    /// The keys: a local uid's share of the outbox (items, payload bytes), of the outbound
    /// snapshot slots (count, bytes), of this device's session rows and of its timer anchors.
    static let uidKeys = ["uid_max_outbox_items", "uid_max_outbox_bytes", "uid_max_slots", "uid_max_slot_bytes",
                          "uid_max_sessions", "uid_max_anchors"]

    static func uidLimit(_ key: String, _ value: ConfigFileParser.Value) throws(ConfigurationError) -> Int {
        if key == "uid_max_slots" { return try integer(value, 1...maximumInboundRows, "slots") }
        if key == "uid_max_sessions" { return try integer(value, 1...maximumInboundRows, "sessions") }
        if key == "uid_max_anchors" { return try integer(value, 1...maximumInboundRows, "anchors") }
        return key.hasSuffix("bytes")
            ? try integer(value, minimumBytes...maximumBytes, "bytes")
            : try integer(value, 1...maximumItems, "items")
    }

    /// `options` with the uid share applied: the key's value, else half of the outbox total
    /// (set or default).
    func applyUIDShare(to options: inout DeliveryStoreOptions) {
        options.maxOutboxItemsPerUID = uidLimits["uid_max_outbox_items"] ?? max(1, options.maxOutboxItemsTotal / 2)
        options.maxOutboxBytesPerUID = uidLimits["uid_max_outbox_bytes"] ?? max(1, options.maxOutboxBytesTotal / 2)
        if let n = uidLimits["uid_max_slots"] { options.maxOutboundSlotsPerUID = n }
        if let n = uidLimits["uid_max_slot_bytes"] { options.maxOutboundSlotBytesPerUID = n }
        if let n = uidLimits["uid_max_sessions"] { options.maxSessionsPerUID = n }
        if let n = uidLimits["uid_max_anchors"] { options.maxAnchorsPerUID = n }
    }

    /// A uid's share set above the outbox total: the key and what is wrong.
    func uidShareConflict(_ options: DeliveryStoreOptions) -> (key: String, message: String)? {
        if uidLimits["uid_max_outbox_items"] != nil, options.maxOutboxItemsPerUID > options.maxOutboxItemsTotal {
            return ("uid_max_outbox_items", "uid_max_outbox_items (\(options.maxOutboxItemsPerUID)) must not exceed outbox_max_items (\(options.maxOutboxItemsTotal))")
        }
        if uidLimits["uid_max_outbox_bytes"] != nil, options.maxOutboxBytesPerUID > options.maxOutboxBytesTotal {
            return ("uid_max_outbox_bytes", "uid_max_outbox_bytes (\(options.maxOutboxBytesPerUID)) must not exceed outbox_max_bytes (\(options.maxOutboxBytesTotal))")
        }
        return nil
    }
}
