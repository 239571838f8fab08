import Foundation
import SessionMesh
import Testing

@Suite("PendingDeliveryQueue")
struct PendingDeliveryQueueTests {
    typealias Queue = PendingDeliveryQueue<Int, String>

    @Test func envelopesDrainInFIFOOrder() {
        var q = Queue()
        for i in 1...5 { q.enqueue(envelope: i) }
        #expect(q.drain() == [1, 2, 3, 4, 5].map { .envelope($0) })
        #expect(q.isEmpty)
    }

    @Test func capDropsTheOldestAndCountsThem() {
        var q = Queue()
        #expect(q.envelopeCapacity == 200)
        for i in 1...250 { q.enqueue(envelope: i) }
        #expect(q.envelopeCount == 200)
        #expect(q.droppedEnvelopeCount == 50)
        #expect(q.drain() == (51...250).map { .envelope($0) })
        #expect(q.droppedEnvelopeCount == 50)
    }

    @Test func snapshotsCollapsePerFeatureAndKeepArrivalOrder() {
        var q = Queue(envelopeCapacity: 10)
        q.enqueue(snapshot: "workout v1", forKey: "workout")
        q.enqueue(envelope: 1)
        q.enqueue(snapshot: "chat v1", forKey: "chat")
        q.enqueue(envelope: 2)
        q.enqueue(snapshot: "workout v2", forKey: "workout")
        q.enqueue(envelope: 3)
        #expect(q.snapshotCount == 2)
        #expect(q.collapsedSnapshotCount == 1)
        #expect(q.drain() == [.envelope(1), .snapshot("chat v1"), .envelope(2), .snapshot("workout v2"), .envelope(3)])
    }

    @Test func snapshotKeysAreBoundedToo() {
        var q = Queue(snapshotCapacity: 2)
        q.enqueue(snapshot: "a", forKey: "a")
        q.enqueue(snapshot: "b", forKey: "b")
        q.enqueue(snapshot: "c", forKey: "c")
        #expect(q.droppedSnapshotCount == 1)
        #expect(q.drain() == [.snapshot("b"), .snapshot("c")])
    }

    @Test func erasedSnapshotsAreKeyedByFeature() {
        var q = PendingDeliveryQueue<AnySessionSyncEnvelope, AnySessionSyncSnapshot>()
        func snapshot(_ feature: String, _ revision: UInt64) -> AnySessionSyncSnapshot {
            AnySessionSyncSnapshot(
                metadata: SessionSyncMetadata(sessionID: Fixture.session, featureID: feature, sourcePeerID: "a", eventID: UUID(), sequence: 0, causalTimestamp: Fixture.t0, payloadType: "S"),
                revision: revision, state: Data())
        }
        q.enqueue(snapshot: snapshot("x", 1))
        q.enqueue(snapshot: snapshot("x", 2))
        let drained = q.drain()
        #expect(drained.count == 1)
        if case let .snapshot(s) = drained.first { #expect(s.revision == 2) } else { Issue.record("expected a snapshot") }
    }
}
