import Foundation
import Testing
@testable import MeshDaemon

@Suite("DeliveryStore file handling")
struct StoreFileTests {
    enum Damage: String, CaseIterable, Sendable {
        case garbage, truncated, overwrittenPages
    }

    @Test(arguments: Damage.allCases)
    func aDamagedFileGivesAClearErrorAndIsLeftUntouched(damage: Damage) throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        let path = dir.path()
        var generator = SeededGenerator(seed: 0x5EED)
        let store = try DeliveryStore.open(path: path)
        for chunk in 0..<10 {
            try store.outbox.enqueue(peer: "A", items: (0..<50).map { makeOutboxItem(chunk * 50 + $0, size: 200) })
        }
        store.close()

        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(bytes.count > 64 << 10)
        switch damage {
        case .garbage: bytes = (0..<bytes.count).map { _ in UInt8.random(in: 0...255, using: &generator) }
        case .truncated: bytes = Array(bytes.prefix(bytes.count / 2))
        case .overwrittenPages:
            for i in 4096..<(bytes.count - 4096) { bytes[i] = UInt8.random(in: 0...255, using: &generator) }
        }
        try Data(bytes).write(to: URL(fileURLWithPath: path))

        let error = #expect(throws: StoreError.self) { try DeliveryStore.open(path: path) }
        #expect(error?.code == .corrupt)
        #expect(error?.path == path)
        #expect(error.map { "\($0)" }?.contains("was not modified") == true)
        #expect(try [UInt8](Data(contentsOf: URL(fileURLWithPath: path))) == bytes)
    }

    @Test func theDatabaseAndItsWALFilesAreOwnerOnly() throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        let path = dir.path()
        let store = try DeliveryStore.open(path: path)
        try store.outbox.enqueue(peer: "A", item: makeOutboxItem(1))
        for file in [path, path + "-wal", path + "-shm"] {
            let attributes = try FileManager.default.attributesOfItem(atPath: file)
            #expect((attributes[.posixPermissions] as? Int) == 0o600, "\(file)")
        }
        store.close()

        // A file created with wider permissions is narrowed when opened.
        #expect(FileManager.default.createFile(atPath: dir.path("other.sqlite"), contents: nil,
                                               attributes: [.posixPermissions: 0o644]))
        let other = try DeliveryStore.open(path: dir.path("other.sqlite"))
        other.close()
        let mode = try FileManager.default.attributesOfItem(atPath: dir.path("other.sqlite"))[.posixPermissions] as? Int
        #expect(mode == 0o600)
    }

    @Test func aForeignOrNewerDatabaseIsRefusedAsIncompatible() throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        let foreign = try SQLiteConnection(path: dir.path("foreign.sqlite"), busyTimeoutMilliseconds: 100)
        try foreign.execute("CREATE TABLE notes (text TEXT)", "test setup")
        foreign.close()
        let error = #expect(throws: StoreError.self) { try DeliveryStore.open(path: dir.path("foreign.sqlite")) }
        #expect(error?.code == .incompatible)

        let store = try DeliveryStore.open(path: dir.path())
        store.close()
        let raw = try SQLiteConnection(path: dir.path(), busyTimeoutMilliseconds: 100)
        try raw.execute("PRAGMA user_version = 99", "test setup")
        raw.close()
        let newer = #expect(throws: StoreError.self) { try DeliveryStore.open(path: dir.path()) }
        #expect(newer?.code == .incompatible)
        #expect(newer?.detail.contains("99") == true)
    }

    @Test func aVersionOneFileIsMigratedKeepingItsDataAndWatermarksOnlyRise() throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        var store = try DeliveryStore.open(path: dir.path())
        _ = try store.outbox.enqueue(peer: "A", item: makeOutboxItem(1))
        store.close()
        // Make it look like a file written by the first release.
        let raw = try SQLiteConnection(path: dir.path(), busyTimeoutMilliseconds: 100)
        try undoSchemaVersion6(raw)
        try raw.execute("DROP TABLE watermark; DROP TABLE seen_batch; DROP TABLE acked_batch; PRAGMA user_version = 1",
                        "test setup")
        raw.close()

        store = try DeliveryStore.open(path: dir.path())
        defer { store.close() }
        #expect(try store.outbox.pending(peer: "A", limit: 10).count == 1, "queued data survives the migration")
        let session = UUID()
        func mark(_ sequence: UInt64) -> WatermarkRecord {
            WatermarkRecord(peer: "A", sessionID: session, direction: .received, featureID: "demo", sequence: sequence,
                            updatedAt: Date(timeIntervalSince1970: 1_700_000_000))
        }
        #expect(try store.peers.putWatermark(mark(5)))
        #expect(try !store.peers.putWatermark(mark(3)))
        #expect(try store.peers.watermarks().map(\.sequence) == [5])
        let huge = #expect(throws: StoreError.self) { try store.peers.putWatermark(mark(.max)) }
        #expect(huge?.code == .invalidArgument)
        _ = try store.peers.drop("A")
        #expect(try store.peers.watermarks().isEmpty, "unpairing forgets the peer's watermarks")
    }

    /// Version 5 drops the inbox's index by peer: a version-4 file keeps its items, and an
    /// unpair still finds the peer's items (by a scan) and only those.
    @Test func aVersionFourFileLosesTheInboxPeerIndexAndUnpairStillFindsItsItems() throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        var store = try DeliveryStore.open(path: dir.path())
        try store.inbox.receive(from: "A", items: [makeInboxItem(1), makeInboxItem(2)], at: storeTestEpoch)
        try store.inbox.receive(from: "B", items: [makeInboxItem(3)], at: storeTestEpoch)
        store.close()
        let raw = try SQLiteConnection(path: dir.path(), busyTimeoutMilliseconds: 100)
        func peerIndexes() throws -> [String] {
            try raw.query("SELECT name FROM sqlite_master WHERE type = 'index' AND name = 'inbox_by_peer'", [], "test") { $0.text(0) }
        }
        #expect(try peerIndexes().isEmpty, "a new file has no such index")
        try undoSchemaVersion6(raw)
        try raw.execute("CREATE INDEX inbox_by_peer ON inbox (peer); PRAGMA user_version = 4", "test setup")
        raw.close()

        store = try DeliveryStore.open(path: dir.path())
        defer { store.close() }
        let check = try SQLiteConnection(path: dir.path(), busyTimeoutMilliseconds: 100)
        defer { check.close() }
        #expect(try check.query("SELECT name FROM sqlite_master WHERE name = 'inbox_by_peer'", [], "test") { $0.text(0) }.isEmpty)
        #expect(try check.first("PRAGMA user_version", [], "test") { $0.int64(0) } == StoreSchema.currentVersion)
        #expect(try store.inbox.pending(featureID: "demo").map(\.item.senderSequence) == [1, 2, 3])
        _ = try store.peers.drop("A")
        #expect(try store.inbox.pending(featureID: "demo").map(\.peer) == ["B"])
    }

    @Test func aVersionTwoFileIsMigratedKeepingItsSeenSetInOrderPerPeer() throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        var store = try DeliveryStore.open(path: dir.path(), options: DeliveryStoreOptions(dedupHorizonPerPeer: 3))
        let pending = makeInboxItem(9)
        try store.inbox.receive(from: "A", items: [pending], at: storeTestEpoch)
        store.close()
        // Make it look like a file written before either part of the seen-set had its own table:
        // one `inbox_seen` row per received item (acked or not), oldest first, and one damaged row.
        let old = (0..<5).map { _ in UUID() }
        let raw = try SQLiteConnection(path: dir.path(), busyTimeoutMilliseconds: 100)
        try undoSchemaVersion6(raw)
        try raw.execute("DROP TABLE seen_batch; DROP TABLE acked_batch; PRAGMA user_version = 2", "test setup")
        for (index, id) in old.enumerated() {
            try raw.run("INSERT INTO inbox_seen (event_id, peer) VALUES (?, ?)",
                        [.blob(StoreColumns.blob(id)), .text(index == 2 ? "B" : "A")], "test setup")
        }
        try raw.run("INSERT INTO inbox_seen (event_id, peer) VALUES (?, ?)", [.blob([1, 2, 3]), .text("A")], "test setup")
        try raw.run("INSERT INTO inbox_seen (event_id, peer) VALUES (?, ?)", [.blob(StoreColumns.blob(pending.eventID)), .text("A")],
                    "test setup")
        raw.close()

        store = try DeliveryStore.open(path: dir.path(), options: DeliveryStoreOptions(dedupHorizonPerPeer: 3))
        #expect(try old.allSatisfy { try store.inbox.hasSeen(eventID: $0) }, "the old seen-set survives the migration")
        #expect(try store.counts().seenEventIDs == 6, "5 old IDs and the pending item's; the damaged row is dropped")
        #expect(try store.inbox.receive(from: "A", items: [makeInboxItem(1, eventID: old[4])], at: storeTestEpoch) == [.duplicate])
        // Acking the pending item (already remembered) and a new one: A's oldest go first, per peer.
        let fresh = makeInboxItem(10)
        try store.inbox.receive(from: "A", items: [fresh], at: storeTestEpoch)
        #expect(try store.inbox.acknowledge(ids: try store.inbox.pending(featureID: "demo").map(\.id)) == 2)
        store.close()
        store = try DeliveryStore.open(path: dir.path(), options: DeliveryStoreOptions(dedupHorizonPerPeer: 3))
        defer { store.close() }
        #expect(try [old[0], old[1], old[3]].allSatisfy { try !store.inbox.hasSeen(eventID: $0) })
        #expect(try [old[4], pending.eventID, fresh.eventID].allSatisfy { try store.inbox.hasSeen(eventID: $0) })
        #expect(try store.inbox.hasSeen(eventID: old[2]), "B's ID is counted apart")
        #expect(try store.counts().seenEventIDs == 4)
        let left = try SQLiteConnection(path: dir.path(), busyTimeoutMilliseconds: 100)
        defer { left.close() }
        #expect(try left.first("SELECT COUNT(*) FROM inbox_seen", [], "test") { $0.int64(0) } == 0)
    }

    @Test func openingInAMissingFolderAndUsingAClosedStoreGiveClearErrors() throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        let missing = #expect(throws: StoreError.self) { try DeliveryStore.open(path: dir.path("no/such/dir.sqlite")) }
        #expect(missing?.code == .cannotOpen)

        let store = try DeliveryStore.open(path: dir.path())
        store.close()
        let closed = #expect(throws: StoreError.self) { try store.outbox.enqueue(peer: "A", item: makeOutboxItem(1)) }
        #expect(closed?.code == .closed)
    }

    @Test func synchronousNormalAndFullVerificationOpenTheSameData() throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        var store = try DeliveryStore.open(path: dir.path(), options: DeliveryStoreOptions(synchronous: .normal))
        try store.outbox.enqueue(peer: "A", item: makeOutboxItem(1))
        store.close()
        store = try DeliveryStore.open(path: dir.path(), options: DeliveryStoreOptions(verification: .full))
        #expect(try store.outbox.pending(peer: "A").count == 1)
        #expect(try store.databaseSize() > 0)
    }
}
