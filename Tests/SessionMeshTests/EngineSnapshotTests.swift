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

@Suite("Engine catch-up between writer groups")
struct EngineCatchUpTests {
    /// Two pairs each learned the other member's events from a snapshot: neither pair can adopt
    /// the other's snapshot, but the authors resend what the other side lacks and all converge.
    @Test func eventsMissingBreaksTheSnapshotDeadlock() throws {
        var p0 = Fixture.engine("p0"), p3 = Fixture.engine("p3"), p1 = Fixture.engine("p1"), p2 = Fixture.engine("p2")
        _ = try p0.submitLocal(.add(1), at: Fixture.at(1))
        _ = try p3.submitLocal(.add(2), at: Fixture.at(2))
        _ = try p1.submitLocal(.add(4), at: Fixture.at(3))
        _ = try p2.submitLocal(.add(8), at: Fixture.at(4))
        // Within each pair, state moves by snapshot only.
        _ = try p0.applySnapshot(p3.makeSnapshot(at: Fixture.at(5)))
        _ = try p3.applySnapshot(p0.makeSnapshot(at: Fixture.at(5)))
        _ = try p1.applySnapshot(p2.makeSnapshot(at: Fixture.at(5)))
        _ = try p2.applySnapshot(p1.makeSnapshot(at: Fixture.at(5)))
        let fromP1 = p1.makeSnapshot(at: Fixture.at(6))
        #expect(try p0.applySnapshot(fromP1) == .staleIgnored(p0.state, currentRevision: p0.revision))
        // p0 can still send p1 its own event; p3 does the same.
        let resend0 = p0.eventsMissing(from: fromP1.reflectedSequences)
        let resend3 = p3.eventsMissing(from: fromP1.reflectedSequences)
        #expect(resend0.map(\.metadata.sourcePeerID) == ["p0"])
        // p0 holds only its own event as an event; it never resends a peer's own events to it.
        #expect(p0.eventsMissing(from: [:], forPeer: "p0").isEmpty)
        for e in resend0 + resend3 { #expect(try p1.receive(e) == .applied(p1.state)) }
        let full = p1.makeSnapshot(at: Fixture.at(7))
        for i in [0, 3, 2] {
            var engine = [0: p0, 3: p3, 2: p2][i]!
            #expect(try engine.applySnapshot(full) == .applied(p1.state))
            #expect(engine.state.total == 15)
        }
    }
}
