import Foundation
import Testing
@testable import MeshDaemon

/// One local uid's share of the outbox: a uid whose items pile up for an offline device is
/// refused at its share while another uid's sends still fit, and every way rows leave the outbox
/// gives the share back.
@Suite("DeliveryStore per-uid outbox share")
struct StoreUIDShareTests {
    private func item(_ index: Int, uid: UInt32?, size: Int = 8) -> OutboxItem {
        var item = makeOutboxItem(index, size: size)
        item.ownerUID = uid
        return item
    }

    private static let options = DeliveryStoreOptions(maxOutboxItemsTotal: 10, maxOutboxItemsPerUID: 4)

    @Test func aUIDIsRefusedAtItsShareWhileAnotherUIDStillQueues() throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        let store = try DeliveryStore.open(path: dir.path(), options: Self.options)
        defer { store.close() }
        for index in 0..<4 { try store.outbox.enqueue(peer: "offline", item: item(index, uid: 1001)) }
        let error = #expect(throws: StoreError.self) { try store.outbox.enqueue(peer: "offline", item: item(4, uid: 1001)) }
        #expect(error?.code == .full)
        #expect(error?.limit == .outboxItemsPerUID(4))
        #expect(error?.limit?.configKey == "uid_max_outbox_items")
        #expect(error.map { "\($0)" }?.contains("uid 1001 has its share of the outbox queued (4 items") == true,
                "\(String(describing: error))")
        // Another uid, and the daemon's own items (no uid), still find room, even for the same device.
        for index in 10..<14 { try store.outbox.enqueue(peer: "offline", item: item(index, uid: 1002)) }
        try store.outbox.enqueue(peer: "offline", item: item(20, uid: nil))
        try store.outbox.enqueue(peer: "offline", item: item(21, uid: nil))
        // The total still binds everyone.
        let total = #expect(throws: StoreError.self) { try store.outbox.enqueue(peer: "other", item: item(30, uid: nil)) }
        #expect(total?.limit == .outboxItemsTotal(10))
        #expect(store.tallies.outboxByUID == [1001: QueueTally(items: 4, bytes: 32), 1002: QueueTally(items: 4, bytes: 32)])
    }

    @Test func aBatchOverTheShareStoresNothingAndAResendOfAQueuedEventGetsItsReceipt() throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        let store = try DeliveryStore.open(path: dir.path(), options: Self.options)
        defer { store.close() }
        let first = item(0, uid: 7)
        try store.outbox.enqueue(peer: "A", item: first)
        let batch = (1..<5).map { item($0, uid: 7) }
        #expect(throws: StoreError.self) { try store.outbox.enqueue(peer: "A", items: batch) }
        #expect(try store.outbox.pending(peer: "A").count == 1, "all or nothing")
        try store.outbox.enqueue(peer: "A", items: Array(batch.prefix(3)))
        #expect(try store.outbox.enqueue(peer: "A", item: first).wasAlreadyQueued, "full, but the event is queued already")
    }

    @Test func theByteShareBindsToo() throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        let store = try DeliveryStore.open(path: dir.path(),
                                           options: DeliveryStoreOptions(maxOutboxBytesTotal: 4096, maxOutboxBytesPerUID: 2048))
        defer { store.close() }
        try store.outbox.enqueue(peer: "A", item: item(0, uid: 5, size: 2000))
        let error = #expect(throws: StoreError.self) { try store.outbox.enqueue(peer: "A", item: item(1, uid: 5, size: 100)) }
        #expect(error?.limit == .outboxBytesPerUID(2048))
        try store.outbox.enqueue(peer: "A", item: item(2, uid: 6, size: 2000))
    }

    @Test func acksCancelsAndUnpairingGiveTheShareBackAndReopeningCountsItAgain() async throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        var store = try DeliveryStore.open(path: dir.path(), options: Self.options)
        var receipts: [OutboxReceipt] = []
        for index in 0..<4 { receipts.append(try store.outbox.enqueue(peer: "A", item: item(index, uid: 1001))) }
        try store.outbox.enqueue(peer: "B", item: item(9, uid: 1002))
        store.close()

        // The share is counted from the rows when the file is opened again.
        store = try DeliveryStore.open(path: dir.path(), options: Self.options)
        #expect(store.tallies.outboxByUID[1001] == QueueTally(items: 4, bytes: 32))
        #expect(throws: StoreError.self) { try store.outbox.enqueue(peer: "A", item: item(4, uid: 1001)) }
        try store.outbox.acknowledge(peer: "A", upTo: receipts[0].sequence)
        let committer = StoreGroupCommitter(store: store)
        _ = try await committer.acknowledgeOutbox(peer: "A", upTo: receipts[1].sequence)
        committer.shutdown()
        #expect(store.tallies.outboxByUID[1001] == QueueTally(items: 2, bytes: 16))
        #expect(try store.outbox.cancel(id: receipts[2].id))
        let pending = try store.outbox.pending(peer: "A")
        #expect(pending.map(\.item.ownerUID) == [1001], "the owner is read back")
        try store.outbox.acknowledge(peer: "A", eventIDs: pending.map(\.item.eventID))
        #expect(store.tallies.outboxByUID[1001] == nil)
        for index in 10..<14 { try store.outbox.enqueue(peer: "A", item: item(index, uid: 1001)) }
        _ = try store.peers.drop("A")
        #expect(store.tallies.outboxByUID == [1002: QueueTally(items: 1, bytes: 8)])
        store.close()
    }

    /// Rows of a file written before the owner column count toward no uid.
    @Test func rowsOfAnOlderFileCountTowardNoUID() throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        var store = try DeliveryStore.open(path: dir.path())
        try store.outbox.enqueue(peer: "A", item: makeOutboxItem(1))
        let session = UUID()
        try store.sessions.put(SessionRecord(sessionID: session, featureID: "demo", owner: "me", status: "open",
                                             updatedAt: storeTestEpoch, revision: 1, sourcePeer: nil))
        try store.sessions.putTimerAnchor(featureID: "demo", sessionID: session, revision: 1, bytes: [1], at: storeTestEpoch)
        store.close()
        let raw = try SQLiteConnection(path: dir.path(), busyTimeoutMilliseconds: 100)
        try raw.execute("""
            ALTER TABLE outbox DROP COLUMN owner_uid; ALTER TABLE outbound_slot DROP COLUMN owner_uid;
            ALTER TABLE session_directory DROP COLUMN owner_uid; ALTER TABLE timer_anchor DROP COLUMN owner_uid;
            ALTER TABLE session_directory DROP COLUMN handed_over;
            PRAGMA user_version = 6
            """, "test setup")
        raw.close()
        store = try DeliveryStore.open(path: dir.path(), options: DeliveryStoreOptions(maxOutboxItemsTotal: 10, maxOutboxItemsPerUID: 4,
                                                                                       maxSessionsPerUID: 1, maxAnchorsPerUID: 1))
        defer { store.close() }
        #expect(try store.outbox.pending(peer: "A").map(\.item.ownerUID) == [nil])
        #expect(store.tallies.outboxByUID.isEmpty)
        #expect(store.tallies.sessionsByUID.isEmpty && store.tallies.anchorsByUID.isEmpty)
        for index in 0..<4 { try store.outbox.enqueue(peer: "A", item: item(index, uid: 1001)) }
        // The upgraded tables have the column again: a uid's whole share is still free.
        let mine = UUID()
        try store.sessions.put(SessionRecord(sessionID: mine, featureID: "demo", owner: "me", status: "open",
                                             updatedAt: storeTestEpoch, revision: 1, sourcePeer: nil), ownerUID: 1001)
        try store.sessions.putTimerAnchor(featureID: "demo", sessionID: mine, revision: 1, bytes: [1], at: storeTestEpoch, ownerUID: 1001)
        #expect(store.tallies.sessionsByUID == [1001: 1] && store.tallies.anchorsByUID == [1001: 1])
    }

    @Test func aUIDPublishingNewSessionsIsRefusedAtItsSlotShareAndUpdatesStillFit() throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        var store = try DeliveryStore.open(path: dir.path(),
                                           options: DeliveryStoreOptions(maxOutboundSlotsPerUID: 3, maxOutboundSlotBytesPerUID: 4096))
        let sessions = (0..<4).map { _ in UUID() }
        for session in sessions.prefix(3) {
            #expect(try store.slots.putOutbound(featureID: "demo", sessionID: session, revision: 1, bytes: [1, 2], at: storeTestEpoch,
                                                ownerUID: 1001))
        }
        let error = #expect(throws: StoreError.self) {
            try store.slots.putOutbound(featureID: "demo", sessionID: sessions[3], revision: 1, bytes: [1], at: storeTestEpoch,
                                        ownerUID: 1001)
        }
        #expect(error?.limit == .outboundSlotsPerUID(3))
        #expect(error?.limit?.configKey == "uid_max_slots")
        #expect(error.map { "\($0)" }?.contains("uid 1001 holds its share of the outbound snapshot slots (3 slots") == true)
        #expect(try store.slots.outbound(featureID: "demo", sessionID: sessions[3]) == nil, "nothing stored")
        // A newer revision of a slot the uid has still fits (a byte share permitting); a stale one
        // is answered false, never refused.
        #expect(try store.slots.putOutbound(featureID: "demo", sessionID: sessions[0], revision: 2, bytes: [UInt8](repeating: 9, count: 100),
                                            at: storeTestEpoch, ownerUID: 1001))
        #expect(try !store.slots.putOutbound(featureID: "demo", sessionID: sessions[0], revision: 2, bytes: [1], at: storeTestEpoch,
                                             ownerUID: 1001))
        let bytes = #expect(throws: StoreError.self) {
            try store.slots.putOutbound(featureID: "demo", sessionID: sessions[1], revision: 2, bytes: [UInt8](repeating: 9, count: 4096),
                                        at: storeTestEpoch, ownerUID: 1001)
        }
        #expect(bytes?.limit == .outboundSlotBytesPerUID(4096))
        // Another uid and the daemon (no uid) still publish.
        #expect(try store.slots.putOutbound(featureID: "demo", sessionID: sessions[3], revision: 1, bytes: [1], at: storeTestEpoch,
                                            ownerUID: 1002))
        #expect(try store.slots.putOutbound(featureID: "demo", sessionID: UUID(), revision: 1, bytes: [1], at: storeTestEpoch))
        #expect(store.tallies.outboundSlotsByUID == [1001: QueueTally(items: 3, bytes: 104), 1002: QueueTally(items: 1, bytes: 1)])
        store.close()

        // Counted again at open; a deleted slot gives its room back.
        store = try DeliveryStore.open(path: dir.path(), options: DeliveryStoreOptions(maxOutboundSlotsPerUID: 3))
        defer { store.close() }
        #expect(store.tallies.outboundSlotsByUID[1001] == QueueTally(items: 3, bytes: 104))
        #expect(try store.slots.deleteOutbound(featureID: "demo", sessionID: sessions[2]))
        #expect(try store.slots.putOutbound(featureID: "demo", sessionID: UUID(), revision: 1, bytes: [1], at: storeTestEpoch,
                                            ownerUID: 1001))
    }
}
