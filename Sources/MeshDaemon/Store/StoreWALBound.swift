import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// How many WAL pages make SQLite checkpoint, by the room left on the store's file system.
///
/// On a full disk a checkpoint must fit in the space reserve: it writes the WAL's pages into the
/// database file while the WAL still holds them. SQLite checkpoints every 1000 pages (4 MiB), more
/// than the reserve gives back; with little room left the WAL could then never be emptied
/// (docs/STORE.md, "A WAL larger than the reserve"). So while the room left is below
/// `lowRoomBytes`, the WAL is checkpointed at a quarter of the reserve; with room to spare it
/// keeps SQLite's 1000 pages, whose fewer checkpoints (each one fsync more with
/// `synchronous = FULL`) keep reliable throughput. The room is read at most every `interval`.
///
/// Not thread-safe: used under the store's lock.
final class StoreWALBound {
    /// SQLite's own bound, kept while there is room.
    static let roomyPages: Int64 = 1_000
    /// The bound with little room left (a quarter of the reserve); nil: no reserve, SQLite's bound.
    let lowRoomPages: Int64?
    /// Below this much free room the low bound applies: eight full-size WALs, so a checkpoint of
    /// the WAL written before the switch fits, and a burst between two reads cannot fill the rest.
    let lowRoomBytes: UInt64
    /// Minimum time between two reads of the room left (monotonic nanoseconds).
    let interval: UInt64
    /// The bound in force.
    private(set) var pages: Int64 = roomyPages
    private var checkedAt: UInt64?
    private let room: () -> UInt64?

    /// `room`: the free bytes of the file system (nil when it cannot be read).
    init(reserveBytes: Int, pageSize: Int64, interval: UInt64 = 100_000_000, room: @escaping () -> UInt64?) {
        let pageSize = max(pageSize, 512)
        lowRoomPages = reserveBytes > 0 ? min(Self.roomyPages, max(16, Int64(reserveBytes) / pageSize / 4)) : nil
        lowRoomBytes = UInt64(Self.roomyPages * pageSize * 8)
        self.interval = interval
        self.room = room
    }

    /// For the store at `databasePath`: reads the room of its folder's file system.
    convenience init(databasePath: String, reserveBytes: Int, pageSize: Int64) {
        let folder = (databasePath as NSString).deletingLastPathComponent
        self.init(reserveBytes: reserveBytes, pageSize: pageSize) { Self.freeBytes(folder.isEmpty ? "." : folder) }
    }

    /// The bound to set now when it must change (read the room if `interval` passed); nil: keep it.
    func change(now: UInt64) -> Int64? {
        guard let lowRoomPages else { return nil }
        if let checkedAt, now &- checkedAt < interval { return nil }
        checkedAt = now
        guard let free = room() else { return nil }
        let wanted = free < lowRoomBytes ? lowRoomPages : Self.roomyPages
        return wanted == pages ? nil : wanted
    }

    /// `pages` was set on the connection.
    func applied(_ pages: Int64) { self.pages = pages }

    static func freeBytes(_ folder: String) -> UInt64? {
        var stats = statvfs()
        guard statvfs(folder, &stats) == 0 else { return nil }
        let (bytes, overflow) = UInt64(stats.f_bavail).multipliedReportingOverflow(by: UInt64(stats.f_frsize))
        return overflow ? UInt64.max : bytes
    }
}
