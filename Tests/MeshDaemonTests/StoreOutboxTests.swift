import Foundation
import Testing
@testable import MeshDaemon

@Suite("DeliveryStore outbox")
struct StoreOutboxTests {
    @Test func itemsComeBackInFIFOOrderPerPeerWithStableSequences() throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        let store = try DeliveryStore.open(path: dir.path())
        var receipts: [OutboxReceipt] = []
        for i in 0..<5 { receipts.append(try store.outbox.enqueue(peer: "A", item: makeOutboxItem(i))) }
        receipts += try store.outbox.enqueue(peer: "A", items: (5..<10).map { makeOutboxItem($0) })
        try store.outbox.enqueue(peer: "B", item: makeOutboxItem(100))

        #expect(receipts.map(\.sequence) == Array(1...10))
        let pending = try store.outbox.pending(peer: "A", limit: 100)
        #expect(pending.map { payloadIndex($0.item.payload) } == Array(0..<10))
        #expect(pending.map(\.sequence) == Array(1...10))
        #expect(try store.outbox.pending(peer: "A", after: 7, limit: 100).map(\.sequence) == [8, 9, 10])
        #expect(try store.outbox.pending(peer: "A", limit: 3).count == 3)
        #expect(try store.outbox.pending(peer: "B").map(\.sequence) == [1])
    }

    @Test func acknowledgingDeletesOnlyWhatWasAcknowledgedAndSequencesNeverRepeat() throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        let store = try DeliveryStore.open(path: dir.path())
        let items = (0..<10).map { makeOutboxItem($0) }
        try store.outbox.enqueue(peer: "A", items: items)
        try store.outbox.enqueue(peer: "B", item: makeOutboxItem(50))

        #expect(try store.outbox.acknowledge(peer: "A", upTo: 4) == 4)
        let left = items[4...].reduce(0) { $0 + $1.payload.count }
        #expect(try store.counts().outboxByPeer["A"] == QueueTally(items: 6, bytes: left), "the counters follow the delete")
        #expect(try store.outbox.acknowledge(peer: "A", upTo: 4) == 0, "an ack again deletes nothing")
        #expect(try store.outbox.acknowledge(peer: "A", eventIDs: [items[6].eventID, items[8].eventID, UUID()]) == 2)
        #expect(try store.outbox.pending(peer: "A").map(\.sequence) == [5, 6, 8, 10])
        #expect(try store.outbox.pending(peer: "B").count == 1)

        try store.outbox.acknowledge(peer: "A", upTo: 10)
        store.close()
        let reopened = try DeliveryStore.open(path: dir.path())
        #expect(try reopened.outbox.pending(peer: "A").isEmpty)
        #expect(try reopened.outbox.enqueue(peer: "A", item: makeOutboxItem(11)).sequence == 11)
        #expect(try reopened.counts().outboxByPeer["A"] == QueueTally(items: 1, bytes: 8))
    }

    @Test func reEnqueueingAQueuedEventReturnsTheExistingEntry() throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        let store = try DeliveryStore.open(path: dir.path())
        let item = makeOutboxItem(1)
        let first = try store.outbox.enqueue(peer: "A", item: item)
        let again = try store.outbox.enqueue(peer: "A", item: item)
        #expect(again == OutboxReceipt(id: first.id, sequence: first.sequence, wasAlreadyQueued: true))
        #expect(try store.outbox.enqueue(peer: "B", item: item).wasAlreadyQueued == false)
        #expect(try store.counts().outbox.items == 2)
        // The next sequence is not used up by the duplicate.
        #expect(try store.outbox.enqueue(peer: "A", item: makeOutboxItem(2)).sequence == first.sequence + 1)
    }

    /// A full queue still answers a send of an event it holds with that event's receipt.
    @Test func reEnqueueingIntoAFullQueueReturnsTheExistingEntry() throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        let store = try DeliveryStore.open(path: dir.path(), options: DeliveryStoreOptions(maxOutboxItemsPerPeer: 2))
        let first = try store.outbox.enqueue(peer: "A", item: makeOutboxItem(1))
        let item = makeOutboxItem(2)
        let second = try store.outbox.enqueue(peer: "A", item: item)
        #expect(try store.outbox.enqueue(peer: "A", item: item) == OutboxReceipt(id: second.id, sequence: second.sequence, wasAlreadyQueued: true))
        #expect(throws: StoreError.self) { try store.outbox.enqueue(peer: "A", item: makeOutboxItem(3)) }
        #expect(try store.outbox.pending(peer: "A").map(\.sequence) == [first.sequence, second.sequence])
    }

    @Test func attemptsCancelAndListingForMeshctlQueue() throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        let store = try DeliveryStore.open(path: dir.path())
        let session = UUID()
        let receipts = try store.outbox.enqueue(peer: "A", items: [makeOutboxItem(0, size: 100, session: session),
                                                                 makeOutboxItem(1, feature: "chat", size: 20)])
        try store.outbox.recordAttempt(peer: "A", sequences: [1, 2], at: storeTestEpoch.addingTimeInterval(60))
        try store.outbox.recordAttempt(peer: "A", sequences: [1], at: storeTestEpoch.addingTimeInterval(90))

        let listing = try store.outbox.list()
        #expect(listing.map(\.attempts) == [2, 1])
        #expect(listing.map(\.size) == [100, 20])
        #expect(listing.map(\.featureID) == ["demo", "chat"])
        #expect(listing[0].sessionID == session && listing[1].sessionID == nil)
        #expect(listing[0].lastAttemptAt == storeTestEpoch.addingTimeInterval(90))
        #expect(listing[0].age(at: storeTestEpoch.addingTimeInterval(100)) == 100)

        #expect(try store.outbox.cancel(id: receipts[0].id))
        #expect(try store.outbox.cancel(id: receipts[0].id) == false)
        #expect(try store.outbox.list().map(\.id) == [receipts[1].id])
        #expect(try store.counts().outbox == QueueTally(items: 1, bytes: 20))
    }

    @Test func limitsRefuseWithFullAndKeepEverythingAlreadyQueued() throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        let options = DeliveryStoreOptions(maxOutboxItemsPerPeer: 5, maxOutboxBytesPerPeer: 1_000,
                                           maxOutboxItemsTotal: 8, maxOutboxBytesTotal: 10_000)
        let store = try DeliveryStore.open(path: dir.path(), options: options)
        try store.outbox.enqueue(peer: "A", items: (0..<5).map { makeOutboxItem($0) })

        let perPeer = #expect(throws: StoreError.self) { try store.outbox.enqueue(peer: "A", item: makeOutboxItem(5)) }
        #expect(perPeer?.code == .full)
        #expect(perPeer?.limit == .outboxItemsPerPeer(5))
        #expect(perPeer.map { "\($0)" }?.contains("outbox items per peer = 5") == true)

        let bytes = #expect(throws: StoreError.self) { try store.outbox.enqueue(peer: "B", item: makeOutboxItem(0, size: 1_001)) }
        #expect(bytes?.limit == .outboxBytesPerPeer(1_000))

        // A batch that would cross the total limit is refused as a whole.
        let batch = #expect(throws: StoreError.self) {
            try store.outbox.enqueue(peer: "B", items: (0..<4).map { makeOutboxItem($0) })
        }
        #expect(batch?.limit == .outboxItemsTotal(8))
        #expect(try store.outbox.pending(peer: "B").isEmpty)
        #expect(try store.outbox.pending(peer: "A").map { payloadIndex($0.item.payload) } == Array(0..<5))

        // Acknowledging frees room; the next sequence continues.
        try store.outbox.acknowledge(peer: "A", upTo: 1)
        #expect(try store.outbox.enqueue(peer: "A", item: makeOutboxItem(5)).sequence == 6)
        #expect(try store.integrityCheck() == ["ok"])
    }

    @Test func aFullDatabaseFileGivesFullAndLosesNothing() throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        let store = try DeliveryStore.open(path: dir.path(), options: DeliveryStoreOptions(maxDatabaseBytes: 256 << 10))
        var accepted: [Int] = []
        var failure: StoreError?
        for i in 0..<200 {
            do {
                try store.outbox.enqueue(peer: "A", item: makeOutboxItem(i, size: 4_000))
                accepted.append(i)
            } catch let error as StoreError {
                failure = error
                break
            }
        }
        #expect(failure?.code == .full)
        #expect(failure?.limit == .databaseSize(256 << 10))
        #expect(!accepted.isEmpty)
        store.close()
        let reopened = try DeliveryStore.open(path: dir.path())
        #expect(try reopened.outbox.pending(peer: "A", limit: 1_000).map { payloadIndex($0.item.payload) } == accepted)
        #expect(try reopened.integrityCheck() == ["ok"])
    }
}
