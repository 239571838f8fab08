/// The `meshd.toml` keys of the durable store and the pre-activation buffer (docs/CONFIG.md,
/// "Delivery limits"): what a file sets, checked key by key. Unset keys keep the defaults of
/// ``DeliveryStoreOptions`` and ``DeliveryRouterOptions``.
public struct DeliveryLimitsConfig: Sendable, Equatable {
    /// `outbox_max_items_per_peer`.
    public var outboxMaxItemsPerPeer: Int?
    /// `outbox_max_bytes_per_peer` (payload bytes).
    public var outboxMaxBytesPerPeer: Int?
    /// `outbox_max_items` (all peers).
    public var outboxMaxItems: Int?
    /// `outbox_max_bytes` (all peers, payload bytes).
    public var outboxMaxBytes: Int?
    /// `inbox_max_items`.
    public var inboxMaxItems: Int?
    /// `inbox_max_bytes` (payload bytes).
    public var inboxMaxBytes: Int?
    /// `dedup_horizon_per_peer`: received event IDs remembered per peer.
    public var dedupHorizonPerPeer: Int?
    /// `store_max_bytes`: ceiling of the database file.
    public var storeMaxBytes: Int?
    /// `store_synchronous`: `"full"` or `"normal"`.
    public var storeSynchronous: DeliveryStoreOptions.Synchronous?
    /// `pending_max_items`: pre-activation buffer per peer.
    public var pendingMaxItems: Int?
    /// The `inbound_max_*` keys set (``PeerStateLimits``), by key.
    public var inboundLimits: [String: Int] = [:]
    /// The `uid_max_*` keys set (a local uid's share of the outbox), by key.
    public var uidLimits: [String: Int] = [:]

    /// Largest item count accepted by the item keys.
    public static let maximumItems = 100_000_000
    /// Smallest value of the byte keys (1 KiB).
    public static let minimumBytes = 1024
    /// Largest value of the byte keys (16 TiB).
    public static let maximumBytes = 1 << 44
    /// Smallest `store_max_bytes` (1 MiB: below it SQLite cannot even hold the schema and indexes).
    public static let minimumStoreBytes = 1 << 20
    /// Smallest `dedup_horizon_per_peer` (a smaller horizon would let a late retry through twice).
    public static let minimumDedupHorizon = 1000
    /// Largest `dedup_horizon_per_peer`: the realtime IDs are also held in memory (≈ 50 bytes
    /// each), so 1 000 000 is ≈ 50 MB per busy peer.
    public static let maximumDedupHorizon = 1_000_000
    /// Largest `pending_max_items` (the buffer lives in memory).
    public static let maximumPendingItems = 100_000

    /// The keys this type reads.
    public static let keys = ["outbox_max_items_per_peer", "outbox_max_bytes_per_peer", "outbox_max_items",
                              "outbox_max_bytes", "inbox_max_items", "inbox_max_bytes", "dedup_horizon_per_peer",
                              "store_max_bytes", "store_synchronous", "pending_max_items"] + inboundKeys + uidKeys

    /// Nothing set.
    public init() {}

    /// Reads `key` if it is one of ``keys``; returns false for another key. Throws a
    /// `ConfigurationError` (message only; the caller adds file, line and key) for a bad value.
    mutating func apply(key: String, value: ConfigFileParser.Value) throws(ConfigurationError) -> Bool {
        switch key {
        case "outbox_max_items_per_peer": outboxMaxItemsPerPeer = try Self.integer(value, 1...Self.maximumItems, "items")
        case "outbox_max_bytes_per_peer": outboxMaxBytesPerPeer = try Self.integer(value, Self.minimumBytes...Self.maximumBytes, "bytes")
        case "outbox_max_items": outboxMaxItems = try Self.integer(value, 1...Self.maximumItems, "items")
        case "outbox_max_bytes": outboxMaxBytes = try Self.integer(value, Self.minimumBytes...Self.maximumBytes, "bytes")
        case "inbox_max_items": inboxMaxItems = try Self.integer(value, 1...Self.maximumItems, "items")
        case "inbox_max_bytes": inboxMaxBytes = try Self.integer(value, Self.minimumBytes...Self.maximumBytes, "bytes")
        case "dedup_horizon_per_peer":
            dedupHorizonPerPeer = try Self.integer(value, Self.minimumDedupHorizon...Self.maximumDedupHorizon, "event IDs")
        case "store_max_bytes": storeMaxBytes = try Self.integer(value, Self.minimumStoreBytes...Self.maximumBytes, "bytes")
        case "pending_max_items": pendingMaxItems = try Self.integer(value, 1...Self.maximumPendingItems, "items")
        case "store_synchronous":
            guard case .string(let text) = value else {
                throw ConfigurationError(message: "must be \"full\" or \"normal\", got \(value.typeName)")
            }
            guard let mode = DeliveryStoreOptions.Synchronous(rawValue: text) else {
                throw ConfigurationError(message: "'\(text)' is not a mode; use \"full\" (survives power loss) or \"normal\" (survives a daemon crash; faster)")
            }
            storeSynchronous = mode
        case _ where Self.inboundKeys.contains(key):
            inboundLimits[key] = try Self.inboundLimit(key, value)
        case _ where Self.uidKeys.contains(key):
            uidLimits[key] = try Self.uidLimit(key, value)
        default:
            return false
        }
        return true
    }

    /// Checks the keys against each other: a per-peer outbox limit set above the total one (set
    /// or default). A total set below the *default* per-peer limit is fine: the per-peer limit
    /// then follows the total. Returns the key at fault and what is wrong, or nil.
    func conflict() -> (key: String, message: String)? {
        let options = storeOptions(DeliveryStoreOptions())
        if outboxMaxItemsPerPeer != nil, options.maxOutboxItemsPerPeer > options.maxOutboxItemsTotal {
            let key = "outbox_max_items_per_peer"
            return (key, "outbox_max_items_per_peer (\(options.maxOutboxItemsPerPeer)) must not exceed outbox_max_items (\(options.maxOutboxItemsTotal)\(outboxMaxItems == nil ? ", the default" : ""))")
        }
        if outboxMaxBytesPerPeer != nil, options.maxOutboxBytesPerPeer > options.maxOutboxBytesTotal {
            let key = "outbox_max_bytes_per_peer"
            return (key, "outbox_max_bytes_per_peer (\(options.maxOutboxBytesPerPeer)) must not exceed outbox_max_bytes (\(options.maxOutboxBytesTotal)\(outboxMaxBytes == nil ? ", the default" : ""))")
        }
        return inboxShareConflict(options) ?? uidShareConflict(options)
    }

    /// `base` with every key this file sets applied.
    public func storeOptions(_ base: DeliveryStoreOptions) -> DeliveryStoreOptions {
        var options = base
        if let n = outboxMaxItemsPerPeer { options.maxOutboxItemsPerPeer = n }
        if let n = outboxMaxBytesPerPeer { options.maxOutboxBytesPerPeer = n }
        if let n = outboxMaxItems { options.maxOutboxItemsTotal = n }
        if let n = outboxMaxBytes { options.maxOutboxBytesTotal = n }
        if let n = inboxMaxItems { options.maxInboxItems = n }
        if let n = inboxMaxBytes { options.maxInboxBytes = n }
        if let n = dedupHorizonPerPeer { options.dedupHorizonPerPeer = n }
        if let n = storeMaxBytes { options.maxDatabaseBytes = n }
        if let mode = storeSynchronous { options.synchronous = mode }
        applyInboundLimits(to: &options.peerState)
        applyInboxShare(to: &options)
        applyUIDShare(to: &options)
        // A lower total without a per-peer key: the per-peer limit follows it down.
        if outboxMaxItemsPerPeer == nil { options.maxOutboxItemsPerPeer = min(options.maxOutboxItemsPerPeer, options.maxOutboxItemsTotal) }
        if outboxMaxBytesPerPeer == nil { options.maxOutboxBytesPerPeer = min(options.maxOutboxBytesPerPeer, options.maxOutboxBytesTotal) }
        return options
    }

    /// `base` with `pending_max_items` applied, if set.
    public func routerOptions(_ base: DeliveryRouterOptions) -> DeliveryRouterOptions {
        var options = base
        if let n = pendingMaxItems { options.pendingCapacity = n }
        if let seconds = inboundLimits["inbox_expire_unattached_after"] { options.inboxUnattachedExpiry = Double(seconds) }
        if let seconds = inboundLimits["session_handover_grace"] { options.sessionHandOverGrace = Double(seconds) }
        return options
    }

    static func integer(_ value: ConfigFileParser.Value, _ range: ClosedRange<Int>,
                                _ unit: String) throws(ConfigurationError) -> Int {
        guard case .integer(let number) = value else {
            throw ConfigurationError(message: "must be an integer number of \(unit) (e.g. \(range.lowerBound)), got \(value.typeName)")
        }
        guard number >= Int64(range.lowerBound), number <= Int64(range.upperBound) else {
            throw ConfigurationError(message: "\(number) is out of range; use \(range.lowerBound) to \(range.upperBound) \(unit)")
        }
        return Int(number)
    }
}
