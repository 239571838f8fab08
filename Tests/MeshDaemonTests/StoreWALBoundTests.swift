import Testing
@testable import MeshDaemon

/// The WAL's checkpoint bound follows the room left on the disk: SQLite's 1000 pages with room to
/// spare (fewer checkpoints, each an fsync), a quarter of the space reserve once little is left
/// (a checkpoint on a full disk then fits in what the reserve gives back).
@Suite("WAL checkpoint bound by the room left")
struct StoreWALBoundTests {
    final class Room: @unchecked Sendable { var bytes: UInt64? = 1 << 40 }

    @Test func littleRoomTakesAQuarterOfTheReserveAndRoomGivesSQLitesBoundBack() {
        let room = Room()
        let bound = StoreWALBound(reserveBytes: 1 << 20, pageSize: 4096, interval: 100) { room.bytes }
        #expect(bound.lowRoomPages == 64)
        #expect(bound.lowRoomBytes == 1_000 * 4096 * 8)
        #expect(bound.change(now: 0) == nil)          // plenty of room: SQLite's bound stays
        room.bytes = 3 << 20
        #expect(bound.change(now: 50) == nil)         // not read again before the interval
        #expect(bound.change(now: 100) == 64)
        bound.applied(64)
        #expect(bound.change(now: 200) == nil)        // still little room: unchanged
        room.bytes = 64 << 20
        #expect(bound.change(now: 300) == 1_000)
    }

    @Test func withoutAReserveOrARoomReadingTheBoundNeverChanges() {
        let none = StoreWALBound(reserveBytes: 0, pageSize: 4096, interval: 0) { 0 }
        #expect(none.lowRoomPages == nil)
        #expect(none.change(now: 1) == nil)
        let unreadable = StoreWALBound(reserveBytes: 1 << 20, pageSize: 4096, interval: 0) { nil }
        #expect(unreadable.change(now: 1) == nil)
        #expect(unreadable.pages == 1_000)
    }

    @Test func aSmallReserveStillGetsSixteenPagesAndAHugeOneAtMostSQLites() {
        #expect(StoreWALBound(reserveBytes: 4096, pageSize: 4096) { 0 }.lowRoomPages == 16)
        #expect(StoreWALBound(reserveBytes: 1 << 30, pageSize: 4096) { 0 }.lowRoomPages == 1_000)
    }

    @Test func theStoreReadsItsOwnFileSystem() {
        #expect(StoreWALBound.freeBytes("/tmp").map { $0 > 0 } == true)
        #expect(StoreWALBound.freeBytes("/no/such/folder/here") == nil)
    }
}
