import Foundation
import SessionMesh
import Testing

@Suite("Engine snapshots with several writers")
struct EngineSnapshotTests {
    @Test func revisionGrowsWithEveryStateChange() throws {
        var a = Fixture.engine("a"), b = Fixture.engine("b")
        #expect(a.revision == 0)
        let e1 = try a.submitLocal(.add(1), at: Fixture.at(1))
        #expect(a.revision == 1)
        _ = try b.receive(e1)
        #expect(b.revision == 1)
        _ = try a.submitLocal(.add(1), at: Fixture.at(2))
        let s = a.makeSnapshot(at: Fixture.at(3))
        #expect(s.revision == 2 && s.reflectedSequences == ["a": 2] && s.metadata.sequence == 2)
        _ = try b.applySnapshot(s)
        #expect(b.revision > 2)
    }

    @Test func olderSnapshotFromTheSameSourceIsStale() throws {
        var a = Fixture.engine("a"), b = Fixture.engine("b")
        _ = try a.submitLocal(.add(1), at: Fixture.at(1))
        let older = a.makeSnapshot(at: Fixture.at(2))
        _ = try a.submitLocal(.add(2), at: Fixture.at(3))
        let newer = a.makeSnapshot(at: Fixture.at(4))
        #expect(try b.applySnapshot(newer) == .applied(a.state))
        let revision = b.revision
        #expect(try b.applySnapshot(older) == .staleIgnored(a.state, currentRevision: revision))
        #expect(try b.applySnapshot(newer) == .staleIgnored(a.state, currentRevision: revision))
    }

    @Test func snapshotReflectingNothingNewIsStale() throws {
        var a = Fixture.engine("a"), b = Fixture.engine("b"), c = Fixture.engine("c")
        let e = try a.submitLocal(.add(1), at: Fixture.at(1))
        _ = try b.receive(e)
        _ = try c.receive(e)
        // c's snapshot reflects a#1, which b already applied: nothing new for b.
        let fromC = c.makeSnapshot(at: Fixture.at(2))
        #expect(try b.applySnapshot(fromC) == .staleIgnored(b.state, currentRevision: b.revision))
    }

    @Test func adoptingMovesBaselinesSoFoldedEventsAreDuplicates() throws {
        var a = Fixture.engine("a"), b = Fixture.engine("b")
        let events = try (1...3).map { try a.submitLocal(.add($0), at: Fixture.at(Double($0))) }
        #expect(try b.applySnapshot(a.makeSnapshot(at: Fixture.at(4))) == .applied(a.state))
        #expect(b.lastSequenceByPeerID == ["a": 3])
        for e in events { #expect(try b.receive(e) == .duplicate(b.state)) }
        let next = try a.submitLocal(.add(4), at: Fixture.at(5))
        #expect(try b.receive(next) == .applied(b.state))
        #expect(b.state == a.state)
    }

    @Test func adoptingReappliesOwnAndOtherPeersUnreflectedEvents() throws {
        var a = Fixture.engine("a"), b = Fixture.engine("b"), c = Fixture.engine("c")
        let a1 = try a.submitLocal(.add(1), at: Fixture.at(1))
        _ = try b.receive(a1)
        _ = try c.receive(a1)
        // b knows c#1 and its own b#1; a's later snapshot reflects neither.
        let c1 = try c.submitLocal(.add(100), at: Fixture.at(2))
        _ = try b.receive(c1)
        _ = try b.submitLocal(.add(10), at: Fixture.at(3))
        _ = try a.submitLocal(.add(1000), at: Fixture.at(4))   // a#2, unknown to b
        let snapshot = a.makeSnapshot(at: Fixture.at(5))
        #expect(snapshot.reflectedSequences == ["a": 2])
        let result = try b.applySnapshot(snapshot)
        #expect(result == .applied(b.state))
        #expect(b.state.total == 1 + 100 + 10 + 1000)
        #expect(b.state.applied.values.allSatisfy { $0 == 1 })
        #expect(b.reflectedSequences == ["a": 2, "b": 1, "c": 1])
    }

    @Test func snapshotIsRefusedWhenHistoryNoLongerReachesBack() throws {
        var a = Fixture.engine("a"), b = Fixture.engine("b", historyLimit: 2)
        _ = try a.submitLocal(.add(1), at: Fixture.at(1))
        for i in 0..<3 { _ = try b.submitLocal(.add(10), at: Fixture.at(2 + Double(i))) }
        // a's snapshot reflects none of b's three events; b only keeps two.
        let before = b.state
        #expect(try b.applySnapshot(a.makeSnapshot(at: Fixture.at(9))) == .staleIgnored(before, currentRevision: b.revision))
        #expect(b.state.total == 30)
    }

    @Test func restartedPeerTakesItsOwnSequenceBackFromASnapshot() throws {
        var a = Fixture.engine("a"), b = Fixture.engine("b")
        for i in 1...4 { _ = try b.receive(a.submitLocal(.add(i), at: Fixture.at(Double(i)))) }
        var restarted = Fixture.engine("a", seed: 99)
        #expect(try restarted.applySnapshot(b.makeSnapshot(at: Fixture.at(5))) == .applied(a.state))
        #expect(restarted.localSequence == 4)
        let next = try restarted.submitLocal(.add(5), at: Fixture.at(6))
        #expect(next.metadata.sequence == 5)
        #expect(try b.receive(next) == .applied(b.state))
    }

    @Test func ignoredEventsAreReevaluatedOnReplay() throws {
        var a = Fixture.engine("a")
        var b = SessionSyncEngine(
            sessionID: Fixture.session, featureID: Fixture.feature, localPeer: Fixture.peer("b"),
            initialState: TallyState(), reducer: TallyReducer(), conflictPolicy: NoNegativeAddsPolicy())
        var c = Fixture.engine("c")
        _ = try b.receive(a.submitLocal(.add(-1), at: Fixture.at(1)))
        _ = try c.submitLocal(.add(7), at: Fixture.at(2))
        let result = try b.applySnapshot(SessionSyncSnapshot(
            metadata: c.makeSnapshot(at: Fixture.at(3)).metadata, revision: c.revision, reflectedSequences: c.reflectedSequences, state: c.state))
        #expect(result.state.total == 7)
        #expect(b.lastSequenceByPeerID == ["a": 1, "c": 1])
    }
}
