import Foundation
import SessionMesh
import Testing

@Suite("Engine dedup and sequence tracking")
struct EngineSequenceTests {
    @Test func nextExpectedSequenceApplies() throws {
        var a = Fixture.engine("a"), b = Fixture.engine("b")
        let first = try a.submitLocal(.add(2), at: Fixture.at(1))
        let second = try a.submitLocal(.add(3), at: Fixture.at(2))
        #expect(first.metadata.sequence == 1 && second.metadata.sequence == 2)
        #expect(try b.receive(first) == .applied(b.state))
        #expect(try b.receive(second) == .applied(b.state))
        #expect(b.state.total == 5)
        #expect(b.lastSequenceByPeerID == ["a": 2])
    }

    @Test func repeatedEventIDIsDuplicate() throws {
        var a = Fixture.engine("a"), b = Fixture.engine("b")
        let envelope = try a.submitLocal(.add(2), at: Fixture.at(1))
        _ = try b.receive(envelope)
        let revision = b.revision
        #expect(try b.receive(envelope) == .duplicate(b.state))
        #expect(b.state.total == 2 && b.revision == revision)
    }

    @Test func sameEventIDUnderANewSequenceIsStillDuplicate() throws {
        var a = Fixture.engine("a"), b = Fixture.engine("b")
        let envelope = try a.submitLocal(.add(2), at: Fixture.at(1))
        _ = try b.receive(envelope)
        var replayed = envelope
        replayed.metadata.sequence = 2
        #expect(try b.receive(replayed) == .duplicate(b.state))
        #expect(b.state.total == 2)
    }

    @Test func olderSequenceIsDuplicateEvenWhenItsIDWasForgotten() throws {
        var a = Fixture.engine("a"), b = Fixture.engine("b", dedupMemory: 4)
        let envelopes = try (1...20).map { try a.submitLocal(.add($0), at: Fixture.at(Double($0))) }
        for e in envelopes { _ = try b.receive(e) }
        #expect(b.rememberedEventIDCount == 4)
        #expect(try b.receive(envelopes[0]) == .duplicate(b.state))
        #expect(b.state.total == (1...20).reduce(0, +))
    }

    @Test func jumpAheadRequiresSnapshotAndAppliesNothing() throws {
        var a = Fixture.engine("a"), b = Fixture.engine("b")
        let first = try a.submitLocal(.add(1), at: Fixture.at(1))
        _ = try a.submitLocal(.add(10), at: Fixture.at(2))
        let third = try a.submitLocal(.add(100), at: Fixture.at(3))
        _ = try b.receive(first)
        let before = b.state
        #expect(try b.receive(third) == .snapshotRequired(expectedSequence: 2, receivedSequence: 3))
        #expect(b.state == before)
        #expect(b.lastSequenceByPeerID == ["a": 1])
    }

    @Test func lateJoinerAsksForASnapshotOnItsFirstEvent() throws {
        var a = Fixture.engine("a"), b = Fixture.engine("b")
        for i in 1...5 { _ = try a.submitLocal(.add(i), at: Fixture.at(Double(i))) }
        let sixth = try a.submitLocal(.add(6), at: Fixture.at(6))
        #expect(try b.receive(sixth) == .snapshotRequired(expectedSequence: 1, receivedSequence: 6))
        #expect(try b.applySnapshot(a.makeSnapshot(at: Fixture.at(7))) == .applied(a.state))
        #expect(try b.receive(sixth) == .duplicate(a.state))
        let seventh = try a.submitLocal(.add(7), at: Fixture.at(8))
        #expect(try b.receive(seventh) == .applied(a.state))
    }

    @Test func refusedEventIsIgnoredAndTheSequenceAdvances() throws {
        var a = Fixture.engine("a")
        var b = SessionSyncEngine(
            sessionID: Fixture.session, featureID: Fixture.feature, localPeer: Fixture.peer("b"),
            initialState: TallyState(), reducer: TallyReducer(), conflictPolicy: NoNegativeAddsPolicy())
        let refused = try a.submitLocal(.add(-5), at: Fixture.at(1))
        let accepted = try a.submitLocal(.add(4), at: Fixture.at(2))
        #expect(try b.receive(refused) == .ignored(TallyState()))
        #expect(b.lastSequenceByPeerID == ["a": 1])
        #expect(try b.receive(accepted) == .applied(b.state))
        #expect(b.state.total == 4)
        #expect(try b.receive(refused) == .duplicate(b.state))
    }

    @Test func dedupAndHistoryMemoryStayBoundedOverALongSession() throws {
        var a = Fixture.engine("a", historyLimit: 64, dedupMemory: 128)
        var b = Fixture.engine("b", historyLimit: 64, dedupMemory: 128)
        for i in 0..<20_000 {
            let e = try a.submitLocal(.add(1), at: Fixture.at(Double(i)))
            _ = try b.receive(e)
        }
        #expect(b.state.total == 20_000)
        #expect(b.rememberedEventIDCount == 128 && a.rememberedEventIDCount == 128)
        #expect(b.historyCount == 64 && a.historyCount == 64)
    }

    @Test func tooManyPeersIsAClearError() throws {
        var b = TallyEngine(
            sessionID: Fixture.session, featureID: Fixture.feature, localPeer: Fixture.peer("b"), initialState: TallyState(),
            reducer: TallyReducer(), conflictPolicy: AcceptAllConflictPolicy(), configuration: SessionSyncEngineConfiguration(maxPeers: 2))
        for id in ["p1", "p2", "p3"] {
            var p = Fixture.engine(id)
            let e = try p.submitLocal(.add(1), at: Fixture.at(1))
            if id == "p3" {
                #expect(throws: SessionSyncError.tooManyPeers(limit: 2)) { try b.receive(e) }
            } else {
                _ = try b.receive(e)
            }
        }
    }
}
