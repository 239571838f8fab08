import Foundation
import Testing
@testable import MeshDaemon

@Suite("DeliveryStore inbox")
struct StoreInboxTests {
    @Test func duplicatesAreRecognisedAcrossAcksAndReopen() throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        let items = (0..<4).map { makeInboxItem($0) }
        var store = try DeliveryStore.open(path: dir.path())
        let first = try store.inbox.receive(from: "A", items: items, at: storeTestEpoch)
        #expect(first.allSatisfy { if case .stored = $0 { true } else { false } })
        // The same event within one batch, and again later: one copy.
        let extra = makeInboxItem(9)
        #expect(try store.inbox.receive(from: "A", items: [extra, extra], at: storeTestEpoch).last == .duplicate)

        let ids = try store.inbox.pending(featureID: "demo").map(\.id)
        try store.inbox.acknowledge(ids: Array(ids.prefix(2)))
        store.close()

        store = try DeliveryStore.open(path: dir.path())
        // Acked (gone from the inbox), still queued, and from another peer: all duplicates.
        let again = try store.inbox.receive(from: "A", items: items, at: storeTestEpoch)
        #expect(again == [.duplicate, .duplicate, .duplicate, .duplicate])
        #expect(try store.inbox.receive(from: "B", items: [items[0]], at: storeTestEpoch) == [.duplicate])
        #expect(try store.inbox.pending(featureID: "demo").count == 3)
    }

    @Test func realtimeEventIDsRecordedAsSeenMakeTheQueuedCopyADuplicate() throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        let store = try DeliveryStore.open(path: dir.path())
        let item = makeInboxItem(1)
        #expect(try store.inbox.recordSeen(from: "A", eventIDs: [item.eventID, item.eventID]) == [true, false])
        #expect(try store.inbox.hasSeen(eventID: item.eventID))
        #expect(try store.inbox.receive(from: "A", items: [item], at: storeTestEpoch) == [.duplicate])
        #expect(try store.inbox.hasSeen(eventID: UUID()) == false)
    }

    @Test func realtimeIDsRecordedWithoutLookupsStillMakeQueuedCopiesDuplicatesAndSurviveReopening() throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        let ids = (1...3).map { makeInboxItem($0) }
        do {
            let store = try DeliveryStore.open(path: dir.path())
            // In memory only: a repeat within the call and one recorded before are not new.
            #expect(try store.inbox.recordSeen(from: "A", eventIDs: [ids[0].eventID, ids[0].eventID], lookUp: false) == [true, false])
            #expect(try store.inbox.recordSeen(from: "A", eventIDs: [ids[0].eventID, ids[1].eventID], lookUp: false) == [false, true])
            let receipts = try store.inbox.receive(from: "A", items: [ids[0], ids[1], ids[2]], at: storeTestEpoch)
            #expect(receipts.count == 3 && receipts[0] == .duplicate && receipts[1] == .duplicate && receipts[2] != .duplicate)
        }
        let reopened = try DeliveryStore.open(path: dir.path())
        #expect(try reopened.inbox.hasSeen(eventID: ids[0].eventID))
        #expect(try reopened.inbox.hasSeen(eventID: ids[1].eventID))
        #expect(try reopened.inbox.receive(from: "A", items: [ids[1]], at: storeTestEpoch) == [.duplicate])
    }

    @Test func pendingIsPerSenderFIFOAndRedeliveriesAreCounted() throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        var store = try DeliveryStore.open(path: dir.path())
        try store.inbox.receive(from: "A", items: [makeInboxItem(1), makeInboxItem(2)], at: storeTestEpoch)
        try store.inbox.receive(from: "B", items: [makeInboxItem(10)], at: storeTestEpoch)
        try store.inbox.receive(from: "A", items: [makeInboxItem(3), makeInboxItem(4, feature: "chat")], at: storeTestEpoch)

        let pending = try store.inbox.pending(featureID: "demo")
        #expect(pending.filter { $0.peer == "A" }.map(\.item.senderSequence) == [1, 2, 3])
        #expect(pending.map(\.peer) == ["A", "A", "B", "A"])
        #expect(pending.allSatisfy { !$0.isRedelivery })
        #expect(try store.inbox.pending(featureID: "chat").map(\.item.senderSequence) == [4])
        #expect(try store.inbox.pending(featureID: "demo", after: pending[1].id, limit: 1).map(\.id) == [pending[2].id])

        // The app got the first two and died before acking; after a restart they are redeliveries.
        #expect(try store.inbox.markDelivered(ids: [pending[0].id, pending[1].id]) == 2)
        store.close()
        store = try DeliveryStore.open(path: dir.path())
        let again = try store.inbox.pending(featureID: "demo")
        #expect(again.map(\.deliveryCount) == [1, 1, 0, 0])
        #expect(again.map(\.isRedelivery) == [true, true, false, false])
        try store.inbox.markDelivered(ids: [again[0].id])
        #expect(try store.inbox.pending(featureID: "demo").first?.deliveryCount == 2)

        #expect(try store.inbox.acknowledge(ids: [again[0].id, again[2].id, InboxID(rawValue: 999)]) == 2)
        #expect(try store.inbox.pending(featureID: "demo").map(\.id) == [again[1].id, again[3].id])
        #expect(try store.counts().inbox.items == 3)
    }

    /// Items of a feature whose app gets them right after the commit are stored as handed out
    /// (a redelivery when handed again after a restart), the others not; a duplicate is still
    /// reported as one, also once the inbox is full.
    @Test func aHandOutCanBeRecordedWithTheInsertAndDuplicatesStayDuplicates() throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        var store = try DeliveryStore.open(path: dir.path(), options: DeliveryStoreOptions(maxInboxItems: 3, maxInboxItemsPerPeer: 3))
        let items = [makeInboxItem(1), makeInboxItem(2, feature: "chat"), makeInboxItem(3)]
        let receipts = try store.inbox.receive(from: "A", items: items, at: storeTestEpoch, handedOutFeatures: ["demo"])
        #expect(receipts.allSatisfy { if case .stored = $0 { true } else { false } })
        store.close()
        store = try DeliveryStore.open(path: dir.path(), options: DeliveryStoreOptions(maxInboxItems: 3, maxInboxItemsPerPeer: 3))
        #expect(try store.inbox.pending(featureID: "demo").map(\.isRedelivery) == [true, true])
        #expect(try store.inbox.pending(featureID: "chat").map(\.isRedelivery) == [false])

        // Full (3 of 3): a copy of a stored item is a duplicate, a new item is refused.
        let again = try store.inbox.receive(from: "A", items: [items[1]], at: storeTestEpoch)
        #expect(again.count == 1 && again.allSatisfy { if case .duplicate = $0 { true } else { false } })
        #expect(throws: StoreError.self) { try store.inbox.receive(from: "A", items: [makeInboxItem(4)], at: storeTestEpoch) }
        #expect(try store.counts().inbox.items == 3)
    }

    @Test func theSeenSetIsBoundedPerPeer() throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        let store = try DeliveryStore.open(path: dir.path(), options: DeliveryStoreOptions(dedupHorizonPerPeer: 10))
        let items = (0..<25).map { makeInboxItem($0) }
        for chunk in stride(from: 0, to: 25, by: 5) {
            try store.inbox.receive(from: "A", items: Array(items[chunk..<chunk + 5]), at: storeTestEpoch)
        }
        let fromB = makeInboxItem(100)
        try store.inbox.receive(from: "B", items: [fromB], at: storeTestEpoch)
        #expect(try store.counts().seenEventIDs == 0, "items waiting in the inbox are remembered by the inbox")
        #expect(try store.inbox.hasSeen(eventID: items[0].eventID))
        let pending = try store.inbox.pending(featureID: "demo", limit: 100)
        // Acked in two transactions, oldest first, B's with the second.
        try store.inbox.acknowledge(ids: pending.prefix(12).map(\.id))
        try store.inbox.acknowledge(ids: pending.dropFirst(12).map(\.id))
        #expect(try store.counts().seenEventIDs == 11)
        // The newest 10 of A are still remembered after the inbox is empty; older ones are forgotten.
        #expect(try store.inbox.hasSeen(eventID: items[24].eventID))
        #expect(try store.inbox.hasSeen(eventID: items[15].eventID))
        #expect(try store.inbox.hasSeen(eventID: items[14].eventID) == false)
        #expect(try store.inbox.hasSeen(eventID: fromB.eventID), "B's ID is counted apart")
        #expect(try store.inbox.receive(from: "A", items: [items[14], items[15]], at: storeTestEpoch).map { $0 == .duplicate }
                == [false, true])
    }

    @Test func realtimeSeenIDsAreBoundedPerPeerOldestFirstAndSurviveReopening() throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        let options = DeliveryStoreOptions(dedupHorizonPerPeer: 10)
        var store = try DeliveryStore.open(path: dir.path(), options: options)
        let ids = (0..<25).map { _ in UUID() }
        // Flushes of 4, 4, 4, 13: the last one alone exceeds the horizon.
        #expect(try store.inbox.recordSeen(from: "A", eventIDs: Array(ids[0..<4])) == Array(repeating: true, count: 4))
        #expect(try store.inbox.recordSeen(from: "A", eventIDs: Array(ids[4..<8])) == Array(repeating: true, count: 4))
        #expect(try store.inbox.recordSeen(from: "A", eventIDs: Array(ids[8..<12])) == Array(repeating: true, count: 4))
        #expect(try store.counts().seenEventIDs == 10)
        #expect(try store.inbox.hasSeen(eventID: ids[2]))
        #expect(try store.inbox.hasSeen(eventID: ids[1]) == false, "the oldest two were forgotten")
        #expect(try store.inbox.recordSeen(from: "B", eventIDs: [ids[24]]) == [true])
        #expect(try store.inbox.recordSeen(from: "B", eventIDs: [ids[24], ids[11]]) == [false, false])
        store.close()

        store = try DeliveryStore.open(path: dir.path(), options: options)
        defer { store.close() }
        #expect(try store.counts().seenEventIDs == 11)
        #expect(try store.inbox.hasSeen(eventID: ids[2]) && store.inbox.hasSeen(eventID: ids[11]))
        #expect(try store.inbox.receive(from: "A", items: [makeInboxItem(1, eventID: ids[5])], at: storeTestEpoch) == [.duplicate],
                "a queued copy of a recorded realtime item is a duplicate after a restart")
        _ = try store.inbox.recordSeen(from: "A", eventIDs: Array(ids[12..<24]))
        #expect(try store.counts().seenEventIDs == 11)
        #expect(try store.inbox.hasSeen(eventID: ids[14]) && store.inbox.hasSeen(eventID: ids[23]))
        #expect(try store.inbox.hasSeen(eventID: ids[13]) == false)
        #expect(try store.inbox.hasSeen(eventID: ids[11]) == false)
        #expect(try store.inbox.hasSeen(eventID: ids[24]), "B's IDs are counted apart")
    }

    @Test func aFullInboxRefusesTheWholeBatchAndKeepsWhatItHas() throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        let store = try DeliveryStore.open(path: dir.path(), options: DeliveryStoreOptions(maxInboxItems: 3, maxInboxItemsPerPeer: 3))
        try store.inbox.receive(from: "A", items: [makeInboxItem(1), makeInboxItem(2)], at: storeTestEpoch)
        let refused = [makeInboxItem(3), makeInboxItem(4)]
        let error = #expect(throws: StoreError.self) {
            try store.inbox.receive(from: "A", items: refused, at: storeTestEpoch)
        }
        #expect(error?.code == .full)
        #expect(error?.limit == .inboxItems(3))
        #expect(try store.inbox.pending(featureID: "demo").map(\.item.senderSequence) == [1, 2])
        // Nothing of the refused batch was remembered: it is accepted once there is room.
        #expect(try store.inbox.hasSeen(eventID: refused[0].eventID) == false)
        try store.inbox.acknowledge(ids: [try #require(try store.inbox.pending(featureID: "demo").first).id])
        #expect(try store.inbox.receive(from: "A", items: refused, at: storeTestEpoch).count == 2)
        #expect(try store.inbox.pending(featureID: "demo").map(\.item.senderSequence) == [2, 3, 4])
    }

    @Test func anAckLimitedToPermittedFeaturesDeletesOnlyThoseAndKeepsTheCountersRight() throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        let store = try DeliveryStore.open(path: dir.path())
        let items = [makeInboxItem(1), makeInboxItem(2, feature: "secret"), makeInboxItem(3)]
        let receipts = try store.inbox.receive(from: "A", items: items, at: storeTestEpoch)
        let ids = receipts.compactMap { receipt -> InboxID? in if case .stored(let id) = receipt { id } else { nil } }
        #expect(ids.count == 3)
        let deleted = try store.inbox.delete(ids: ids + [InboxID(rawValue: 999)], permitting: { $0 == "demo" })
        #expect(deleted == [ids[0], ids[2]], "the other feature's item and an unknown id are left out")
        #expect(try store.inbox.pending(featureID: "secret").map(\.id) == [ids[1]])
        #expect(try store.inbox.pending(featureID: "demo").isEmpty)
        #expect(try store.counts().inbox == QueueTally(items: 1, bytes: items[1].payload.count))
        #expect(try store.inbox.delete(ids: ids) == [ids[1]], "acked ids are unknown the second time")
        #expect(try store.counts().inbox == QueueTally())
        #expect(try store.inbox.receive(from: "A", items: items, at: storeTestEpoch) == [.duplicate, .duplicate, .duplicate],
                "acked items stay remembered")
    }

    @Test func storingWhatFitsKeepsTheItemsBeforeTheFirstThatDoesNot() throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        let store = try DeliveryStore.open(path: dir.path(), options: DeliveryStoreOptions(maxInboxItems: 5, maxInboxItemsPerPeer: 5))
        let first = (1...3).map { makeInboxItem($0) }
        _ = try store.inbox.receive(from: "A", items: first, at: storeTestEpoch)

        // 3 of 5 taken: a duplicate takes no room, two new ones fit, the rest waits.
        let next = [first[2]] + (4...8).map { makeInboxItem($0) }
        let receipts = try store.inbox.receive(from: "A", items: next, at: storeTestEpoch, storingWhatFits: true)
        #expect(receipts.count == 3)
        #expect(receipts.first == .duplicate)
        #expect(try store.counts().inbox.items == 5)
        #expect(try store.inbox.pending(featureID: "demo").map(\.item.senderSequence) == [1, 2, 3, 4, 5])

        // Without it, the whole list is refused; when nothing fits, both refuse.
        #expect(throws: StoreError.self) { try store.inbox.receive(from: "A", items: [makeInboxItem(9)], at: storeTestEpoch) }
        let none = #expect(throws: StoreError.self) {
            try store.inbox.receive(from: "A", items: [makeInboxItem(9)], at: storeTestEpoch, storingWhatFits: true)
        }
        #expect(none?.limit == .inboxItems(5))
        #expect(try store.counts().inbox.items == 5)
        #expect(try store.integrityCheck() == ["ok"])
    }
}
