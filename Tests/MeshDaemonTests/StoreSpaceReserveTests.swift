#if canImport(Glibc)
import Glibc
#endif
import Foundation
@testable import MeshDaemon
import Testing

/// The space held back beside the database for deletes on a full disk (docs/STORE.md, "A full
/// disk"). The full-disk behaviour itself is shown with a real meshd on a small tmpfs
/// (ProcessDiskFullTests).
@Suite("Store space reserve")
struct StoreSpaceReserveTests {
    /// Allocated blocks and size of the file at `path`, and its permission bits.
    private func allocation(_ path: String) -> (blocks: Int, size: Int, mode: mode_t)? {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        return (Int(status.st_blocks) * 512, Int(status.st_size), status.st_mode & 0o777)
    }

    @Test func openingAStoreTakesTheReserveWithRealBlocksAndMode0600() throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        let store = try DeliveryStore.open(path: dir.path())
        defer { store.close() }
        #expect(store.spaceReserve().held)
        let file = try #require(allocation(dir.path() + "-reserve"))
        #expect(file.size >= 1 << 20 && file.blocks >= 1 << 20, "a sparse file would hold back nothing: \(file)")
        #expect(file.mode == 0o600)
    }

    @Test func aZeroReserveCreatesNoFile() throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        let store = try DeliveryStore.open(path: dir.path(), options: DeliveryStoreOptions(spaceReserveBytes: 0))
        defer { store.close() }
        #expect(!store.spaceReserve().held)
        #expect(allocation(dir.path() + "-reserve") == nil)
    }

    /// Released: the file is gone (its blocks are free). Restored: the checkpoint runs first,
    /// then the file is back at full size; a second restore while held does nothing.
    @Test func releaseFreesTheFileAndRestoreCheckpointsThenTakesItBack() throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        let reserve = StoreSpaceReserve(databasePath: dir.path(), bytes: 256 << 10)
        #expect(reserve.isHeld)
        #expect(reserve.release())
        #expect(!reserve.isHeld && reserve.releases == 1)
        #expect(allocation(reserve.path) == nil)
        #expect(!reserve.release(), "nothing left to release")

        var checkpoints = 0
        reserve.restore(checkpoint: { checkpoints += 1 }, now: 1)
        #expect(reserve.isHeld && checkpoints == 1)
        #expect((allocation(reserve.path)?.blocks ?? 0) >= 256 << 10)
        reserve.restore(checkpoint: { checkpoints += 1 }, now: 2)
        #expect(checkpoints == 1, "no checkpoint while the reserve is held")
    }

    /// A reserve file left short (a crash while it was written, or a copy that made it sparse)
    /// is completed when the store opens.
    @Test func aShortReserveFileIsCompletedAtOpen() throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        let path = dir.path() + "-reserve"
        #expect(FileManager.default.createFile(atPath: path, contents: Data(count: 4096), attributes: [.posixPermissions: 0o600]))
        let reserve = StoreSpaceReserve(databasePath: dir.path(), bytes: 512 << 10)
        #expect(reserve.isHeld)
        let file = try #require(allocation(path))
        #expect(file.size >= 512 << 10 && file.blocks >= 512 << 10)
    }
}

extension StoreSpaceReserveTests {
    /// A reserve the file system refuses for another reason than room (here its path is a
    /// folder) leaves the store without one, and the store works as with no reserve.
    @Test func aReserveThatCannotBeMadeForAnotherReasonIsLeftOut() throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        try FileManager.default.createDirectory(atPath: dir.path() + "-reserve", withIntermediateDirectories: false)
        let store = try DeliveryStore.open(path: dir.path())
        defer { store.close() }
        #expect(!store.spaceReserve().held)
        #expect(try store.outbox.enqueue(peer: "A", item: makeOutboxItem(1)).sequence == 1)
        _ = try store.inbox.receive(from: "A", items: [makeInboxItem(1)], at: storeTestEpoch)
        #expect(try store.counts().inbox.items == 1)
    }
}
