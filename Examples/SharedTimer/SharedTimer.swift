import Foundation
import MeshLocalAPI
import SessionMesh
import SessionMeshClient

/// One device's side of the shared timer: a `SessionSyncEngine` fed by a
/// `DaemonSessionSyncTransport`. Local taps go out as reliable envelopes; every change is also
/// published as the latest snapshot, so a device that starts late (or restarts) catches up from
/// it; snapshot requests of peers are answered with the current state.
actor SharedTimer {
    private var engine: TimerEngine
    private let transport: DaemonSessionSyncTransport
    private let client: MeshClient
    private let now: @Sendable () -> Date
    private let print: @Sendable (String) -> Void
    private(set) var closed = false

    let sessionID: UUID
    let featureID: String

    init(engine: TimerEngine, transport: DaemonSessionSyncTransport, client: MeshClient,
         now: @escaping @Sendable () -> Date, print: @escaping @Sendable (String) -> Void) {
        self.engine = engine
        self.transport = transport
        self.client = client
        self.now = now
        self.print = print
        self.sessionID = engine.sessionID
        self.featureID = engine.featureID
    }

    // MARK: - Local taps

    /// Applies a tap here and sends it to every paired device.
    func tap(_ action: TimerEvent.Action) async throws {
        let instant = now()
        let envelope = try engine.submitLocal(TimerEvent(action: action, at: UnixMicros.of(instant)), at: instant)
        print("applied \(action.rawValue) (here) -> \(describe(at: instant))")
        try await transport.send(AnySessionSyncEnvelope(envelope), mode: .reliableEventually, to: nil)
        try await publishSnapshot()
    }

    /// The line `show` prints: elapsed time at `instant` (now when nil), phase and laps.
    func show(at instant: Date?) -> String {
        describe(at: instant ?? now())
    }

    private func describe(at instant: Date) -> String {
        let state = engine.state
        let laps = state.laps.map { Self.seconds($0) }.joined(separator: " ")
        return "elapsed \(Self.seconds(state.elapsedMicroseconds(at: instant))) s (\(state.phase)) at \(UnixMicros.of(instant)), laps: [\(laps)]"
    }

    static func seconds(_ micros: Int64) -> String {
        let sign = micros < 0 ? "-" : ""
        let magnitude = micros.magnitude
        let fraction = String(magnitude % 1_000_000)
        return "\(sign)\(magnitude / 1_000_000).\(String(repeating: "0", count: 6 - fraction.count))\(fraction)"
    }

    // MARK: - Catching up

    /// Adopts the newest snapshot of this session the daemon holds from a peer (it persists
    /// them, so this works while the peer is away), then asks the reachable peers for a fresh one.
    func catchUp() async throws {
        if let latest = transport.latestPeerSnapshot(featureID: featureID), latest.metadata.sessionID == sessionID {
            adopt(latest, announce: "caught up from")
        }
        try await transport.requestSnapshot(sessionID: sessionID, from: nil)
    }

    /// Applies a peer's snapshot when it brings news; returns whether it did.
    @discardableResult
    private func adopt(_ snapshot: AnySessionSyncSnapshot, announce verb: String) -> Bool {
        guard snapshot.metadata.payloadType == TimerPayload.state, snapshot.metadata.sessionID == sessionID else { return false }
        do {
            let typed = try snapshot.typed(as: TimerState.self)
            guard case .applied = try engine.applySnapshot(typed) else { return false }
            print("\(verb) \(Self.short(snapshot.metadata.sourcePeerID))'s snapshot (revision \(snapshot.revision)) -> \(describe(at: now()))")
            return true
        } catch {
            warn("ignored a snapshot from \(Self.short(snapshot.metadata.sourcePeerID)): \(error)")
            return false
        }
    }

    // MARK: - From peers

    /// An envelope from a peer: a timer event, or the session's closing envelope.
    func receive(_ envelope: AnySessionSyncEnvelope) async {
        let metadata = envelope.metadata
        guard metadata.sessionID == sessionID else { return }
        if metadata.payloadType == SharedTimer.closedPayloadType {
            if !closed { print("session closed by \(Self.short(metadata.sourcePeerID))") }
            closed = true
            return
        }
        guard metadata.payloadType == TimerPayload.event else { return }
        do {
            let typed = try envelope.typed(as: TimerEvent.self)
            switch try engine.receive(typed) {
            case .applied:
                print("applied \(typed.payload.action.rawValue) (from \(Self.short(metadata.sourcePeerID))) -> \(describe(at: now()))")
                try await publishSnapshot()
            case .duplicate, .ignored:
                break
            case .snapshotRequired:
                try await transport.requestSnapshot(sessionID: sessionID, from: nil)
            }
        } catch {
            warn("ignored an event from \(Self.short(metadata.sourcePeerID)): \(error)")
        }
    }

    /// A peer's snapshot: adopted when newer; then the peer gets the events it lacks.
    func receive(_ snapshot: AnySessionSyncSnapshot) async {
        guard snapshot.metadata.sessionID == sessionID, snapshot.metadata.payloadType == TimerPayload.state else { return }
        adopt(snapshot, announce: "adopted")
        for missing in engine.eventsMissing(from: snapshot.reflectedSequences, forPeer: snapshot.metadata.sourcePeerID) {
            do {
                try await transport.send(AnySessionSyncEnvelope(missing), mode: .reliableEventually, to: nil)
            } catch {
                warn("could not resend an event: \(error)")
            }
        }
    }

    /// A peer asked for the state of this session.
    func answer(_ request: SessionSnapshotRequest) async {
        guard request.sessionID == sessionID else { return }
        do { try await publishSnapshot() } catch { warn("could not answer a snapshot request: \(error)") }
    }

    private func publishSnapshot() async throws {
        guard !closed else { return }
        let snapshot = engine.makeSnapshot(at: now())
        try await transport.sendSnapshot(AnySessionSyncSnapshot(snapshot), mode: .latestSnapshot, to: nil)
    }

    // MARK: - Closing

    /// Closes the session for everyone; returns once the daemon delivered the closing envelope
    /// to the reachable peers or queued it durably for the others.
    func close() async throws -> MeshSessionCloseReply {
        let reply = try await client.closeSession(sessionID: sessionID, featureID: featureID)
        closed = true
        return reply
    }

    static let closedPayloadType = "sessionmesh.session.closed"

    /// The first group of a device ID.
    static func short(_ id: String) -> String {
        String(id.prefix { $0 != "-" })
    }

    private func warn(_ text: String) {
        guard !Task.isCancelled else { return }    // shutting down: sends end with CancellationError
        FileHandle.standardError.write(Data("shared-timer: \(text)\n".utf8))
    }
}
