import CSQLite
import Foundation

/// The daemon's durable store: per-peer outbox, inbox with dedup, latest-state slots, the
/// session directory and timer anchors, in one SQLite file (WAL mode).
///
/// This type owns the connection: it opens, checks and closes the file, holds the lock, the
/// space reserve and the in-memory state derived from the tables (queue tallies, seen-sets),
/// and commits groups of writes (``StoreGroupCommitter``). The tables are read and written
/// through its gateways, one per concern: ``outbox``, ``inbox``, ``slots``, ``sessions`` and
/// ``peers``. A gateway is a view of the store (no state, lock or allocation of its own).
///
/// Thread safety: internally locked. Every method takes one lock for its whole duration, so
/// calls from any thread or actor are serialised; a call blocks its caller for the duration
/// of one SQLite transaction (one fsync with `synchronous = FULL`). Call it from the daemon's
/// store actor, not from an event loop.
///
/// Durability: a method that returns has committed; with `synchronous = FULL` the commit was
/// fsynced. Every multi-item method is one transaction: all or nothing. See docs/STORE.md.
///
/// Peers are named by the textual form of their device ID; the store treats it as opaque.
public final class DeliveryStore: @unchecked Sendable {
    /// The database file.
    public let path: String
    /// The options the store was opened with.
    public let options: DeliveryStoreOptions

    private let lock = NSLock()
    private var connection: SQLiteConnection
    /// Derived from the tables at open and kept in step after each commit; guarded by `lock`.
    var tallies: StoreTallies
    /// The realtime seen-set (`seen_batch`) in memory; guarded by `lock`.
    var seenBatches: SeenBatches
    /// The seen-set of acknowledged inbox items (`acked_batch`) in memory; guarded by `lock`.
    var ackedBatches: SeenBatches
    /// Space held back for deletes on a full disk; guarded by `lock`.
    private let reserve: StoreSpaceReserve
    /// The WAL's checkpoint bound by the room left on the disk; guarded by `lock`.
    private let walBound: StoreWALBound

    /// The outbox: reliable items for peer daemons, per-peer FIFO, until the peer acks.
    public var outbox: StoreOutbox { StoreOutbox(store: self) }
    /// The inbox: items received from peer daemons, deduplicated, until an app acks.
    public var inbox: StoreInbox { StoreInbox(store: self) }
    /// Latest-state slots, outbound and per peer inbound.
    public var slots: StoreSlots { StoreSlots(store: self) }
    /// The session directory and timer anchors.
    public var sessions: StoreSessions { StoreSessions(store: self) }
    /// Per-peer state: delivery watermarks, and forgetting a peer when it is unpaired.
    public var peers: StorePeers { StorePeers(store: self) }

    private init(path: String, options: DeliveryStoreOptions, connection: SQLiteConnection, tallies: StoreTallies,
                 seenBatches: SeenBatches, ackedBatches: SeenBatches, pageSize: Int64) {
        self.path = path
        self.options = options
        self.connection = connection
        self.tallies = tallies
        self.seenBatches = seenBatches
        self.ackedBatches = ackedBatches
        reserve = StoreSpaceReserve(databasePath: path, bytes: options.spaceReserveBytes)
        walBound = StoreWALBound(databasePath: path, reserveBytes: options.spaceReserveBytes, pageSize: pageSize)
        boundWAL()
    }

    /// Opens the store at `path`, creating it (mode 0600) when missing, and migrates its schema.
    ///
    /// The parent folder must exist. The file is checked first (``DeliveryStoreOptions/verification``):
    /// a damaged file, or a file that is not a SQLite database, throws `.corrupt` and is left
    /// exactly as it was — the store never deletes or recreates it. A database of another
    /// program or of a newer schema throws `.incompatible`.
    public static func open(path: String, options: DeliveryStoreOptions = DeliveryStoreOptions()) throws -> DeliveryStore {
        let connection = try SQLiteConnection(path: path, busyTimeoutMilliseconds: options.busyTimeoutMilliseconds)
        do {
            try StoreOpener(connection: connection, options: options).prepare()
            let tallies = try StoreTallies.load(from: connection)
            let seenBatches = try SeenBatches.load(SeenBatches.realtimeTable, from: connection)
            let ackedBatches = try SeenBatches.load(SeenBatches.ackedTable, from: connection)
            let pageSize = try connection.first("PRAGMA page_size", [], "read page size") { $0.int64(0) } ?? 4096
            return DeliveryStore(path: path, options: options, connection: connection, tallies: tallies,
                                 seenBatches: seenBatches, ackedBatches: ackedBatches, pageSize: pageSize)
        } catch {
            connection.close()
            throw error
        }
    }

    /// Closes the file. Later calls throw `.closed`. Also happens when the store is released.
    public func close() {
        lock.lock()
        defer { lock.unlock() }
        connection.close()
    }

    /// Runs `body` under the lock with the open connection.
    func withConnection<T>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        lock.lock()
        defer { lock.unlock() }
        if connection.isClosed {
            throw StoreError(code: .closed, operation: "use the store", path: path, detail: "the store is closed")
        }
        boundWAL()
        return try body(connection)
    }

    /// Sets the WAL's checkpoint bound when the room left on the disk calls for another one
    /// (read at most every 100 ms). Under the lock.
    private func boundWAL() {
        guard let pages = walBound.change(now: DispatchTime.now().uptimeNanoseconds) else { return }
        if (try? connection.execute("PRAGMA wal_autocheckpoint = \(pages)", "bound the WAL by the room left")) != nil {
            walBound.applied(pages)
        }
    }

    /// As `withConnection`, for a write that frees space (deleting delivered, acknowledged or
    /// cancelled items) or that must precede such a delete (recording an inbox hand-out). When
    /// `body` fails because the disk is full, the space reserve is given up and `body` runs once
    /// more (it must be a transaction that can simply be run again); the reserve is taken back
    /// after a checkpoint as soon as there is room again. With the reserve already given up,
    /// a checkpoint comes first: once the WAL is copied back it is written from its start
    /// again (or truncated), into pages that deletes freed.
    ///
    /// `onlyIf` (checked under the lock, after the failure): whether this write may use the
    /// reserve at all; when it says no, the failure is thrown as it is.
    func withConnectionFreeingSpace<T>(onlyIf mayUseReserve: () -> Bool = { true },
                                       _ body: (SQLiteConnection) throws -> T) throws -> T {
        try withConnection { db in
            let checkpoint = { _ = try? db.execute("PRAGMA wal_checkpoint(TRUNCATE)", "checkpoint on a full disk") }
            let result: T
            do {
                result = try body(db)
            } catch let error as StoreError where error.isFileFull && mayUseReserve() {
                if !reserve.release() { checkpoint() }
                result = try body(db)
            }
            reserve.restore(checkpoint: checkpoint, now: DispatchTime.now().uptimeNanoseconds)
            return result
        }
    }

    /// Whether the space reserve is held, and how often it was given up for a delete.
    public func spaceReserve() -> (held: Bool, releases: Int) {
        lock.lock()
        defer { lock.unlock() }
        return (reserve.isHeld, reserve.releases)
    }

    /// Gives memory back after a burst: the page cache's unused pages (up to 16 MiB after heavy
    /// traffic), then the free heap of the whole process (`malloc_trim`). The cache fills again
    /// from the file system's cache as needed. Does nothing once the store is closed.
    public func releaseMemory() {
        try? withConnection { $0.releaseMemory() }    // closed: no page cache left to release
        _ = meshd_trim_heap()
    }

    /// Bytes of heap the store's page cache holds now (0 once it is closed).
    public func pageCacheBytes() -> Int {
        (try? withConnection { $0.pageCacheBytes }) ?? 0
    }

    /// How much is stored: outbox per peer and in total, inbox, remembered event IDs.
    public func counts() throws -> StoreCounts {
        try withConnection { _ in
            StoreCounts(outboxByPeer: tallies.outboxByPeer.filter { $0.value.items > 0 },
                        outbox: tallies.outbox, inbox: tallies.inbox,
                        seenEventIDs: seenBatches.count + ackedBatches.count)
        }
    }

    /// Size of the main database file in bytes (pages in use × page size, excluding the WAL).
    public func databaseSize() throws -> Int {
        try withConnection { db in
            let pages = try db.first("PRAGMA page_count", [], "read page count") { $0.int64(0) } ?? 0
            let size = try db.first("PRAGMA page_size", [], "read page size") { $0.int64(0) } ?? 0
            return Int(pages * size)
        }
    }

    /// Runs `PRAGMA integrity_check` now; returns `["ok"]` or the problems found.
    public func integrityCheck() throws -> [String] {
        try withConnection { db in
            try db.query("PRAGMA integrity_check(50)", [], "check integrity") { $0.text(0) }
        }
    }
}
