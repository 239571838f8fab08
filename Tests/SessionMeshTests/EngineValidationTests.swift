import Foundation
import SessionMesh
import Testing

@Suite("Engine validation and echoes")
struct EngineValidationTests {
    @Test func sessionMismatchIsNamed() throws {
        var a = Fixture.engine("a"), b = Fixture.engine("b")
        var envelope = try a.submitLocal(.add(1), at: Fixture.at(1))
        envelope.metadata.sessionID = Fixture.otherSession
        #expect(throws: SessionSyncError.sessionMismatch(expected: Fixture.session, received: Fixture.otherSession)) {
            try b.receive(envelope)
        }
        #expect(b.state == TallyState())
        #expect(String(describing: SessionSyncError.sessionMismatch(expected: Fixture.session, received: Fixture.otherSession)).contains("session mismatch"))
    }

    @Test func featureMismatchIsNamed() throws {
        var a = Fixture.engine("a"), b = Fixture.engine("b")
        var envelope = try a.submitLocal(.add(1), at: Fixture.at(1))
        envelope.metadata.featureID = "chat"
        #expect(throws: SessionSyncError.featureMismatch(expected: "tally", received: "chat")) { try b.receive(envelope) }
        #expect(b.lastSequenceByPeerID.isEmpty)
    }

    @Test func payloadTypeMismatchIsNamed() throws {
        var a = Fixture.engine("a"), b = Fixture.engine("b")
        var envelope = try a.submitLocal(.add(1), at: Fixture.at(1))
        #expect(envelope.metadata.payloadType == "TallyEvent")
        envelope.metadata.payloadType = "ChatEvent"
        #expect(throws: SessionSyncError.payloadTypeMismatch(expected: "TallyEvent", received: "ChatEvent")) { try b.receive(envelope) }
    }

    @Test func protocolVersionMismatchIsNamed() throws {
        var a = Fixture.engine("a"), b = Fixture.engine("b")
        var envelope = try a.submitLocal(.add(1), at: Fixture.at(1))
        envelope.metadata.protocolVersion = 2
        #expect(throws: SessionSyncError.protocolVersionMismatch(expected: 1, received: 2)) { try b.receive(envelope) }
        #expect(SessionSyncProtocol.currentVersion == 1)
    }

    @Test func snapshotMismatchesAreNamedToo() throws {
        var a = Fixture.engine("a"), b = Fixture.engine("b")
        _ = try a.submitLocal(.add(1), at: Fixture.at(1))
        var snapshot = a.makeSnapshot(at: Fixture.at(2))
        snapshot.metadata.sessionID = Fixture.otherSession
        #expect(throws: SessionSyncError.sessionMismatch(expected: Fixture.session, received: Fixture.otherSession)) { try b.applySnapshot(snapshot) }
        snapshot = a.makeSnapshot(at: Fixture.at(2))
        snapshot.metadata.payloadType = "TallyEvent"
        #expect(throws: SessionSyncError.payloadTypeMismatch(expected: "TallyState", received: "TallyEvent")) { try b.applySnapshot(snapshot) }
    }

    @Test func ownEchoNeverReapplies() async throws {
        var a = Fixture.engine("a")
        let loopback = LoopbackSessionSyncTransport(localPeer: a.localPeer)
        var inbox = loopback.receiveEnvelopes().makeAsyncIterator()
        let envelope = try a.submitLocal(.add(5), at: Fixture.at(1))
        try await loopback.send(AnySessionSyncEnvelope(envelope), mode: .realtimeBestEffort, to: nil)
        let echoed = try #require(await inbox.next())
        #expect(try a.receive(echoed.typed(as: TallyEvent.self)) == .duplicate(a.state))
        #expect(a.state.total == 5)
        #expect(a.state.applied == ["a#1": 1])
    }

    @Test func typedAndErasedConvertBothWays() throws {
        var a = Fixture.engine("a")
        let envelope = try a.submitLocal(.set(key: "k", value: 3), at: Fixture.at(1))
        let erased = try AnySessionSyncEnvelope(envelope)
        #expect(try erased.typed(as: TallyEvent.self) == envelope)
        let snapshot = a.makeSnapshot(at: Fixture.at(2))
        let erasedSnapshot = try AnySessionSyncSnapshot(snapshot)
        #expect(try erasedSnapshot.typed(as: TallyState.self) == snapshot)
        #expect(throws: SessionSyncError.self) { try erased.typed(as: TallyState.self) }
    }

    @Test func reducerFailureConsumesNoSequence() throws {
        struct Failing: SessionSyncReducer {
            struct Boom: Error {}
            func reduce(state: inout Int, event: Int, context: SessionEventContext) throws {
                if event < 0 { throw Boom() }
                state += event
            }
        }
        var engine = SessionSyncEngine(
            sessionID: Fixture.session, featureID: "f", localPeer: Fixture.peer("a"), initialState: 0,
            reducer: Failing(), conflictPolicy: AcceptAllConflictPolicy<Int, Int>())
        _ = try engine.submitLocal(2, at: Fixture.at(1))
        #expect(throws: SessionSyncError.self) { try engine.submitLocal(-1, at: Fixture.at(2)) }
        #expect(engine.state == 2)
        #expect(engine.localSequence == 1)
    }
}
