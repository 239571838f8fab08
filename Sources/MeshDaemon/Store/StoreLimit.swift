/// A limit of the durable store that a write would exceed, carried by a `.full` ``StoreError``.
///
/// Byte limits count payload bytes only (not SQLite's own overhead); ``databaseSize`` and
/// ``disk`` are the file-level ceilings.
public enum StoreLimit: Sendable, Hashable, CustomStringConvertible {
    /// At most this many outbox items for one peer.
    case outboxItemsPerPeer(Int)
    /// At most this many payload bytes in the outbox for one peer.
    case outboxBytesPerPeer(Int)
    /// At most this many outbox items over all peers.
    case outboxItemsTotal(Int)
    /// At most this many outbox payload bytes over all peers.
    case outboxBytesTotal(Int)
    /// At most this many outbox items queued by one local uid's apps (its share).
    case outboxItemsPerUID(Int)
    /// At most this many outbox payload bytes queued by one local uid's apps.
    case outboxBytesPerUID(Int)
    /// At most this many outbound snapshot slots created by one local uid's apps.
    case outboundSlotsPerUID(Int)
    /// At most this many snapshot bytes in the outbound slots of one local uid.
    case outboundSlotBytesPerUID(Int)
    /// At most this many of this device's session rows created by one local uid's apps.
    case sessionsPerUID(Int)
    /// At most this many of this device's timer anchors created by one local uid's apps.
    case anchorsPerUID(Int)
    /// At most this many inbox items (received, not yet acknowledged by the local app).
    case inboxItems(Int)
    /// At most this many inbox items from one peer (its share of the inbox).
    case inboxItemsPerPeer(Int)
    /// At most this many inbox payload bytes from one peer.
    case inboxBytesPerPeer(Int)
    /// At most this many inbox payload bytes.
    case inboxBytes(Int)
    /// At most this many inbound snapshot slots from one peer.
    case inboundSlotsPerPeer(Int)
    /// At most this many snapshot bytes in the inbound slots of one peer.
    case inboundSlotBytesPerPeer(Int)
    /// At most this many inbound snapshot slots over all peers.
    case inboundSlotsTotal(Int)
    /// At most this many snapshot bytes in the inbound slots of all peers.
    case inboundSlotBytesTotal(Int)
    /// At most this many session rows learnt from one peer.
    case inboundSessionsPerPeer(Int)
    /// At most this many session rows learnt from peers, over all peers.
    case inboundSessionsTotal(Int)
    /// At most this many timer anchors from one peer.
    case inboundAnchorsPerPeer(Int)
    /// At most this many timer anchors from peers, over all peers.
    case inboundAnchorsTotal(Int)
    /// The configured maximum database file size, in bytes, was reached (SQLITE_FULL).
    case databaseSize(Int)
    /// The file system is full (SQLITE_FULL from the operating system).
    case disk

    /// A local uid's share of the outbox, of the outbound slots, of the session rows or of the
    /// timer anchors (`uid_max_*`), not a limit of the whole store.
    public var isUIDShare: Bool {
        switch self {
        case .outboxItemsPerUID, .outboxBytesPerUID, .outboundSlotsPerUID, .outboundSlotBytesPerUID,
             .sessionsPerUID, .anchorsPerUID: true
        default: false
        }
    }

    /// A local uid's share of this device's session rows or timer anchors (`uid_max_sessions`,
    /// `uid_max_anchors`): rows that stay (a closed session keeps its row), so only a higher
    /// limit makes room.
    public var isSessionShare: Bool {
        switch self {
        case .sessionsPerUID, .anchorsPerUID: true
        default: false
        }
    }

    /// A local uid's share of the outbound snapshot slots (`uid_max_slots`, `uid_max_slot_bytes`).
    public var isOutboundSlotShare: Bool {
        switch self {
        case .outboundSlotsPerUID, .outboundSlotBytesPerUID: true
        default: false
        }
    }

    /// The `meshd.toml` key that sets this limit (docs/CONFIG.md), or nil for a full disk.
    public var configKey: String? {
        switch self {
        case .outboxItemsPerPeer: "outbox_max_items_per_peer"
        case .outboxBytesPerPeer: "outbox_max_bytes_per_peer"
        case .outboxItemsTotal: "outbox_max_items"
        case .outboxBytesTotal: "outbox_max_bytes"
        case .outboxItemsPerUID: "uid_max_outbox_items"
        case .outboxBytesPerUID: "uid_max_outbox_bytes"
        case .outboundSlotsPerUID: "uid_max_slots"
        case .outboundSlotBytesPerUID: "uid_max_slot_bytes"
        case .sessionsPerUID: "uid_max_sessions"
        case .anchorsPerUID: "uid_max_anchors"
        case .inboxItems: "inbox_max_items"
        case .inboxBytes: "inbox_max_bytes"
        case .inboxItemsPerPeer: "inbox_max_items_per_peer"
        case .inboxBytesPerPeer: "inbox_max_bytes_per_peer"
        case .inboundSlotsPerPeer: "inbound_max_slots_per_peer"
        case .inboundSlotBytesPerPeer: "inbound_max_slot_bytes_per_peer"
        case .inboundSlotsTotal: "inbound_max_slots"
        case .inboundSlotBytesTotal: "inbound_max_slot_bytes"
        case .inboundSessionsPerPeer: "inbound_max_sessions_per_peer"
        case .inboundSessionsTotal: "inbound_max_sessions"
        case .inboundAnchorsPerPeer: "inbound_max_anchors_per_peer"
        case .inboundAnchorsTotal: "inbound_max_anchors"
        case .databaseSize: "store_max_bytes"
        case .disk: nil
        }
    }

    /// E.g. `outbox items per peer = 10000`.
    public var description: String {
        switch self {
        case .outboxItemsPerPeer(let n): "outbox items per peer = \(n)"
        case .outboxBytesPerPeer(let n): "outbox bytes per peer = \(n)"
        case .outboxItemsTotal(let n): "outbox items in total = \(n)"
        case .outboxBytesTotal(let n): "outbox bytes in total = \(n)"
        case .outboxItemsPerUID(let n): "outbox items per local uid = \(n)"
        case .outboxBytesPerUID(let n): "outbox bytes per local uid = \(n)"
        case .outboundSlotsPerUID(let n): "outbound snapshot slots per local uid = \(n)"
        case .outboundSlotBytesPerUID(let n): "outbound snapshot bytes per local uid = \(n)"
        case .sessionsPerUID(let n): "session rows per local uid = \(n)"
        case .anchorsPerUID(let n): "timer anchors per local uid = \(n)"
        case .inboxItems(let n): "inbox items = \(n)"
        case .inboxBytes(let n): "inbox bytes = \(n)"
        case .inboxItemsPerPeer(let n): "inbox items per peer = \(n)"
        case .inboxBytesPerPeer(let n): "inbox bytes per peer = \(n)"
        case .inboundSlotsPerPeer(let n): "inbound snapshot slots per peer = \(n)"
        case .inboundSlotBytesPerPeer(let n): "inbound snapshot bytes per peer = \(n)"
        case .inboundSlotsTotal(let n): "inbound snapshot slots in total = \(n)"
        case .inboundSlotBytesTotal(let n): "inbound snapshot bytes in total = \(n)"
        case .inboundSessionsPerPeer(let n): "session rows per peer = \(n)"
        case .inboundSessionsTotal(let n): "session rows from peers in total = \(n)"
        case .inboundAnchorsPerPeer(let n): "timer anchors per peer = \(n)"
        case .inboundAnchorsTotal(let n): "timer anchors from peers in total = \(n)"
        case .databaseSize(let n): "database size = \(n) bytes"
        case .disk: "disk full"
        }
    }
}
