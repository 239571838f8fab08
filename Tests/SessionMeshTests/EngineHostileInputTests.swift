import Foundation
import SessionMesh
import Testing

/// Extreme values a broken or hostile peer can send must never trap the engine.
@Suite("Engine hostile input")
struct EngineHostileInputTests {
    static func snapshot(from source: String, revision: UInt64, reflected: [String: UInt64]) -> SessionSyncSnapshot<TallyState> {
        SessionSyncSnapshot(
            metadata: SessionSyncMetadata(sessionID: Fixture.session, featureID: Fixture.feature, sourcePeerID: source, eventID: UUID(), sequence: 0, causalTimestamp: Fixture.t0, payloadType: "TallyState"),
            revision: revision, reflectedSequences: reflected, state: TallyState())
    }

    @Test func maximalSequencesAndRevisionsSaturate() throws {
        var b = Fixture.engine("b")
        #expect(try b.applySnapshot(Self.snapshot(from: "x", revision: .max, reflected: ["b": .max, "x": .max])) == .applied(TallyState()))
        #expect(b.revision == .max)
        #expect(b.localSequence == .max)
        #expect(throws: SessionSyncError.sequenceExhausted(peerID: "b")) { try b.submitLocal(.add(1), at: Fixture.t0) }
        #expect(b.eventsMissing(from: ["b": .max, "x": .max]).isEmpty)
        var x = Fixture.engine("x")
        var envelope = try x.submitLocal(.add(1), at: Fixture.t0)
        envelope.metadata.sequence = .max
        #expect(try b.receive(envelope) == .duplicate(TallyState()))
    }

    @Test func aSequenceJumpToTheMaximumAsksForASnapshot() throws {
        var b = Fixture.engine("b")
        var x = Fixture.engine("x")
        var envelope = try x.submitLocal(.add(1), at: Fixture.t0)
        envelope.metadata.sequence = .max
        #expect(try b.receive(envelope) == .snapshotRequired(expectedSequence: 1, receivedSequence: .max))
    }

    @Test func tooManyPeersInASnapshotIsAClearError() throws {
        var b = TallyEngine(
            sessionID: Fixture.session, featureID: Fixture.feature, localPeer: Fixture.peer("b"), initialState: TallyState(),
            reducer: TallyReducer(), conflictPolicy: AcceptAllConflictPolicy(), configuration: SessionSyncEngineConfiguration(maxPeers: 4))
        let many = Dictionary(uniqueKeysWithValues: (0..<10).map { ("p\($0)", UInt64(1)) })
        #expect(throws: SessionSyncError.tooManyPeers(limit: 4)) { try b.applySnapshot(Self.snapshot(from: "p0", revision: 1, reflected: many)) }
        #expect(b.lastSequenceByPeerID.isEmpty)
    }

    @Test func negativeWireLimitsDoNotTrap() throws {
        var limits = SessionWireLimits()
        limits.maxStringBytes = -5
        let bytes = try SessionWireCodec.encode(SessionSnapshotRequest(sessionID: Fixture.session, requestingPeerID: "b"))
        #expect(throws: SessionWireError.self) { try SessionWireCodec.decode(bytes, limits: limits) }
    }
}
