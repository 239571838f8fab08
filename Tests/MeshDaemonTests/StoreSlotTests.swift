import Foundation
import Testing
@testable import MeshDaemon

@Suite("DeliveryStore slots, sessions, anchors, unpair")
struct StoreSlotTests {
    @Test func aLowerRevisionNeverReplacesAHigherOneAcrossReopen() throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        let session = UUID()
        var store = try DeliveryStore.open(path: dir.path())
        #expect(try store.slots.putOutbound(featureID: "demo", revision: 5, bytes: [5], at: storeTestEpoch))
        #expect(try store.slots.putOutbound(featureID: "demo", sessionID: session, revision: 1, bytes: [1], at: storeTestEpoch))
        #expect(try store.slots.putInbound(peer: "A", featureID: "demo", revision: 7, bytes: [7], at: storeTestEpoch) == .stored)
        store.close()

        store = try DeliveryStore.open(path: dir.path())
        #expect(try store.slots.putOutbound(featureID: "demo", revision: 4, bytes: [4], at: storeTestEpoch) == false)
        #expect(try store.slots.putOutbound(featureID: "demo", revision: 5, bytes: [55], at: storeTestEpoch) == false)
        #expect(try store.slots.putInbound(peer: "A", featureID: "demo", revision: 6, bytes: [6], at: storeTestEpoch) == .stale)
        #expect(try store.slots.outbound(featureID: "demo")?.bytes == [5])
        #expect(try store.slots.outbound(featureID: "demo", sessionID: session)?.revision == 1)
        #expect(try store.slots.inbound(peer: "A", featureID: "demo")?.bytes == [7])
        #expect(try store.slots.inbound(peer: "B", featureID: "demo") == nil)

        #expect(try store.slots.putOutbound(featureID: "demo", revision: 6, bytes: [], at: storeTestEpoch))
        #expect(try store.slots.outbound(featureID: "demo")?.bytes == [])
        #expect(try store.slots.listOutbound().count == 2)
        #expect(try store.slots.listInbound(peer: "A").map(\.revision) == [7])

        let tooBig = #expect(throws: StoreError.self) {
            try store.slots.putOutbound(featureID: "demo", revision: .max, bytes: [], at: storeTestEpoch)
        }
        #expect(tooBig?.code == .invalidArgument)
    }

    @Test func sessionRowsAndTimerAnchorsFollowTheLatestRevision() throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        let id = UUID()
        var store = try DeliveryStore.open(path: dir.path())
        let running = SessionRecord(sessionID: id, featureID: "demo", owner: "dev-a", status: "running",
                                    updatedAt: storeTestEpoch, revision: 1, sourcePeer: "A")
        var closed = running
        closed.status = "closed"
        closed.revision = 2
        #expect(try store.sessions.put(running))
        #expect(try store.sessions.put(closed))
        #expect(try store.sessions.putTimerAnchor(featureID: "demo", sessionID: id, revision: 3, bytes: [3], at: storeTestEpoch) == .stored)
        store.close()

        store = try DeliveryStore.open(path: dir.path())
        #expect(try store.sessions.put(running) == false, "a stale announcement must not revive a closed session")
        #expect(try store.sessions.record(featureID: "demo", id: id)?.status == "closed")
        #expect(try store.sessions.list(featureID: "demo").map(\.sessionID) == [id])
        #expect(try store.sessions.list(featureID: "chat").isEmpty)
        #expect(try store.sessions.putTimerAnchor(featureID: "demo", sessionID: id, revision: 2, bytes: [2], at: storeTestEpoch) == .stale)
        #expect(try store.sessions.timerAnchor(featureID: "demo", sessionID: id)?.bytes == [3])
        #expect(try store.sessions.timerAnchor(featureID: "chat", sessionID: id) == nil)
        #expect(try store.sessions.listTimerAnchors().count == 1)
        #expect(try store.sessions.features(of: id) == ["demo"])
        #expect(try store.sessions.deleteTimerAnchor(featureID: "demo", sessionID: id))
        #expect(try store.sessions.delete(featureID: "demo", id: id))
        #expect(try store.sessions.record(featureID: "demo", id: id) == nil)
    }

    @Test func droppingAPeerForgetsItsQueuesSlotsAndSessionsOnly() throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        let store = try DeliveryStore.open(path: dir.path())
        try store.outbox.enqueue(peer: "A", items: [makeOutboxItem(1), makeOutboxItem(2)])
        try store.outbox.enqueue(peer: "B", item: makeOutboxItem(3))
        let received = makeInboxItem(1)
        try store.inbox.receive(from: "A", items: [received], at: storeTestEpoch)
        try store.inbox.receive(from: "B", items: [makeInboxItem(2)], at: storeTestEpoch)
        try store.slots.putInbound(peer: "A", featureID: "demo", revision: 1, bytes: [1], at: storeTestEpoch)
        try store.slots.putInbound(peer: "B", featureID: "demo", revision: 1, bytes: [1], at: storeTestEpoch)
        try store.slots.putOutbound(featureID: "demo", revision: 1, bytes: [1], at: storeTestEpoch)
        try store.sessions.put(SessionRecord(sessionID: UUID(), featureID: "demo", owner: "a", status: "running",
                                           updatedAt: storeTestEpoch, revision: 1, sourcePeer: "A"))
        let anchored = UUID()
        try store.sessions.putTimerAnchor(featureID: "demo", sessionID: anchored, from: "A", revision: 1, bytes: [1], at: storeTestEpoch)
        try store.sessions.putTimerAnchor(featureID: "demo", sessionID: anchored, from: "B", revision: 1, bytes: [1], at: storeTestEpoch)
        try store.sessions.putTimerAnchor(featureID: "demo", sessionID: anchored, revision: 1, bytes: [1], at: storeTestEpoch)

        let summary = try store.peers.drop("A")
        #expect(summary == PeerDropSummary(outboxItems: 2, inboxItems: 1, inboundSlots: 1, sessions: 1, anchors: 1))
        #expect(try store.sessions.listTimerAnchors().map(\.sourcePeer) == [nil, "B"], "A's anchor goes, B's and this device's stay")
        #expect(try store.outbox.pending(peer: "A").isEmpty)
        #expect(try store.outbox.pending(peer: "B").count == 1)
        #expect(try store.inbox.pending(featureID: "demo").map(\.peer) == ["B"])
        #expect(try store.slots.listInbound().map(\.peer) == ["B"])
        #expect(try store.slots.outbound(featureID: "demo") != nil)
        #expect(try store.counts().outboxByPeer.keys.sorted() == ["B"])
        // Re-paired: old events are still recognised, sequences continue.
        #expect(try store.inbox.receive(from: "A", items: [received], at: storeTestEpoch) == [.duplicate])
        #expect(try store.outbox.enqueue(peer: "A", item: makeOutboxItem(4)).sequence == 3)
    }
}
