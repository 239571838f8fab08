/// Limits and durability settings of a ``DeliveryStore``, fixed when it is opened.
///
/// Defaults suit a desktop daemon: `synchronous = FULL`, 100 000 items / 256 MiB of outbox per
/// peer, 1 GiB of outbox in total, 100 000 inbox items, and a dedup horizon of the last 100 000
/// event IDs per peer. Byte limits count payload bytes only.
public struct DeliveryStoreOptions: Sendable, Equatable {
    /// How SQLite makes a commit durable (`PRAGMA synchronous` in WAL mode).
    public enum Synchronous: String, Sendable, Equatable {
        /// Every commit fsyncs the write-ahead log: a returned write survives kill -9 and power loss.
        case full
        /// Commits reach the OS at once, fsync happens at checkpoints: a returned write survives
        /// kill -9 of the daemon, but the last commits may be lost on power loss or kernel crash.
        case normal
    }

    /// How much of the file is checked when it is opened.
    public enum Verification: String, Sendable, Equatable {
        /// `PRAGMA quick_check`: every page and record format, O(size of the file). Default.
        case quick
        /// `PRAGMA integrity_check`: also indexes against tables; slower on big files.
        case full
        /// No check (only for benchmarks of opening).
        case none
    }

    /// Durability of each commit. Default `.full`.
    public var synchronous: Synchronous
    /// Check run when the file is opened; corruption makes `open` throw `.corrupt`.
    public var verification: Verification
    /// How long a write waits for a lock held by another connection, in milliseconds.
    public var busyTimeoutMilliseconds: Int
    /// Maximum outbox items queued for one peer.
    public var maxOutboxItemsPerPeer: Int
    /// Maximum outbox payload bytes queued for one peer.
    public var maxOutboxBytesPerPeer: Int
    /// Maximum outbox items over all peers.
    public var maxOutboxItemsTotal: Int
    /// Maximum outbox payload bytes over all peers.
    public var maxOutboxBytesTotal: Int
    /// Maximum outbox items queued by one local uid's apps: its share, so one uid sending to
    /// an offline device cannot fill the outbox for the others. Default half of
    /// ``maxOutboxItemsTotal`` (500 000). Items of no known uid count toward none.
    public var maxOutboxItemsPerUID: Int
    /// Maximum outbox payload bytes queued by one local uid's apps. Default half of
    /// ``maxOutboxBytesTotal`` (512 MiB).
    public var maxOutboxBytesPerUID: Int
    /// Maximum outbound snapshot slots created by one local uid's apps (one per feature and
    /// session it publishes). Default 4096. Slots of no known uid count toward none.
    public var maxOutboundSlotsPerUID: Int
    /// Maximum snapshot bytes in the outbound slots of one local uid. Default 64 MiB.
    public var maxOutboundSlotBytesPerUID: Int
    /// Maximum rows of this device's session directory created by one local uid's apps (one
    /// per feature and session it announces or closes). Default 4096. Rows of peers and of no
    /// known uid count toward none.
    public var maxSessionsPerUID: Int
    /// Maximum timer anchors of this device created by one local uid's apps (one per feature
    /// and session). Default 4096.
    public var maxAnchorsPerUID: Int
    /// Maximum inbox items (received, not yet acknowledged by a local app).
    public var maxInboxItems: Int
    /// Maximum inbox payload bytes.
    public var maxInboxBytes: Int
    /// Maximum inbox items from one peer: its share, so one paired device cannot fill the
    /// inbox for the others. Default 50 000 (half of the default inbox).
    public var maxInboxItemsPerPeer: Int
    /// Maximum inbox payload bytes from one peer. Default 128 MiB (half of the default inbox).
    public var maxInboxBytesPerPeer: Int
    /// How many received event IDs are remembered per peer for dedup after the inbox item is
    /// gone. See docs/STORE.md ("Dedup horizon") for the tradeoff.
    public var dedupHorizonPerPeer: Int
    /// Hard ceiling of the database file in bytes (`PRAGMA max_page_count`); `nil` = no ceiling.
    /// Reaching it gives `.full` with ``StoreLimit/databaseSize(_:)``, like a full disk.
    public var maxDatabaseBytes: Int?
    /// Disk space held back beside the database (`delivery.sqlite-reserve`) so that deletes of
    /// delivered items still commit when the file system is full (``StoreSpaceReserve``);
    /// 0 = none. Default 1 MiB.
    public var spaceReserveBytes: Int
    /// Limits of what paired peers can make this store hold (snapshot slots, session rows,
    /// timer anchors), per peer and over all peers.
    public var peerState: PeerStateLimits

    /// Creates options; every value has the default documented on the type.
    public init(synchronous: Synchronous = .full,
                verification: Verification = .quick,
                busyTimeoutMilliseconds: Int = 5_000,
                maxOutboxItemsPerPeer: Int = 100_000,
                maxOutboxBytesPerPeer: Int = 256 << 20,
                maxOutboxItemsTotal: Int = 1_000_000,
                maxOutboxBytesTotal: Int = 1 << 30,
                maxOutboxItemsPerUID: Int? = nil,
                maxOutboxBytesPerUID: Int? = nil,
                maxOutboundSlotsPerUID: Int = 4096,
                maxOutboundSlotBytesPerUID: Int = 64 << 20,
                maxSessionsPerUID: Int = 4096,
                maxAnchorsPerUID: Int = 4096,
                maxInboxItems: Int = 100_000,
                maxInboxBytes: Int = 256 << 20,
                maxInboxItemsPerPeer: Int? = nil,
                maxInboxBytesPerPeer: Int? = nil,
                dedupHorizonPerPeer: Int = 100_000,
                maxDatabaseBytes: Int? = nil,
                spaceReserveBytes: Int = 1 << 20,
                peerState: PeerStateLimits = PeerStateLimits()) {
        self.synchronous = synchronous
        self.verification = verification
        self.busyTimeoutMilliseconds = busyTimeoutMilliseconds
        self.maxOutboxItemsPerPeer = maxOutboxItemsPerPeer
        self.maxOutboxBytesPerPeer = maxOutboxBytesPerPeer
        self.maxOutboxItemsTotal = maxOutboxItemsTotal
        self.maxOutboxBytesTotal = maxOutboxBytesTotal
        self.maxOutboxItemsPerUID = maxOutboxItemsPerUID ?? max(1, maxOutboxItemsTotal / 2)
        self.maxOutboxBytesPerUID = maxOutboxBytesPerUID ?? max(1, maxOutboxBytesTotal / 2)
        self.maxOutboundSlotsPerUID = maxOutboundSlotsPerUID
        self.maxOutboundSlotBytesPerUID = maxOutboundSlotBytesPerUID
        self.maxSessionsPerUID = maxSessionsPerUID
        self.maxAnchorsPerUID = maxAnchorsPerUID
        self.maxInboxItems = maxInboxItems
        self.maxInboxBytes = maxInboxBytes
        self.maxInboxItemsPerPeer = maxInboxItemsPerPeer ?? max(1, maxInboxItems / 2)
        self.maxInboxBytesPerPeer = maxInboxBytesPerPeer ?? max(1, maxInboxBytes / 2)
        self.dedupHorizonPerPeer = dedupHorizonPerPeer
        self.maxDatabaseBytes = maxDatabaseBytes
        self.spaceReserveBytes = spaceReserveBytes
        self.peerState = peerState
    }
}
