import Foundation
import MeshDaemon
import SessionMesh

/// The engine every simulated app runs: a shared sum (events add a number), so its state after
/// every event reached every app is the same everywhere.
public struct SimulationSumReducer: SessionSyncReducer {
    public init() {}
    public func reduce(state: inout Int, event: Int, context: SessionEventContext) throws { state &+= event }
}

public typealias SimulationEngine = SessionSyncEngine<Int, Int, SimulationSumReducer, AcceptAllConflictPolicy<Int, Int>>

/// One app on one daemon, attached to one feature: it sends in all four modes, acknowledges,
/// detaches and reattaches, and feeds its `SessionSyncEngine` with what arrives.
///
/// An app outlives its daemon's crashes (it is another process): it keeps its engine and the
/// reliable envelopes its daemon has not confirmed, and sends those again, in order, once
/// attached again. What it sees goes to the ledger and the checks as it happens.
public final class SimulatedApp: @unchecked Sendable {
    public let daemon: Int
    public let feature: String
    let context: SimulationContext
    /// The session engine events and snapshots use.
    public let session: UUID
    public var engine: SimulationEngine
    var realtimeIDs: SessionEventIDGenerator
    /// Sum of the values this app submitted (the engines converge to the sum over all apps).
    public private(set) var submittedTotal = 0

    /// Set while attached (the router's attachment ID).
    public internal(set) var attachment: UInt64?
    /// Bumped with every attach; deliveries carry it.
    public internal(set) var generation = 0
    /// An operation of this app is running (one at a time keeps the send order plain).
    public internal(set) var busy = false
    /// Reliable envelopes not confirmed by the daemon yet, oldest first (sent again in order).
    public internal(set) var unsent: [AnySessionSyncEnvelope] = []
    /// The envelope whose send is under way (its outcome unknown if the daemon crashes).
    var sendingEventID: UUID?
    /// Inbox items received and not acknowledged.
    public internal(set) var unacknowledged: [(inboxID: Int64, eventID: UUID)] = []
    var snapshotRevision: UInt64 = 0
    /// Received item count (summary).
    public private(set) var received = 0

    init(daemon: Int, feature: String, session: UUID, seed: UInt64, context: SimulationContext) {
        self.daemon = daemon
        self.feature = feature
        self.context = context
        self.session = session
        let peer = SessionPeer(id: "app-\(daemon)-\(feature)", deviceClass: SessionPeer.DeviceClass(rawValue: "sim"),
                               appInstanceID: "app-\(daemon)-\(feature)")
        let configuration = SessionSyncEngineConfiguration(eventPayloadType: "sim.add", statePayloadType: "sim.sum",
                                                           eventIDs: SessionEventIDGenerator(seed: seed))
        engine = SimulationEngine(sessionID: session, featureID: feature, localPeer: peer, initialState: 0,
                                  reducer: SimulationSumReducer(), conflictPolicy: AcceptAllConflictPolicy(),
                                  configuration: configuration)
        realtimeIDs = SessionEventIDGenerator(seed: seed ^ 0x5EA1_713E)
    }

    var name: String { "d\(daemon)/\(feature)" }

    /// Its daemon crashed: the attachment is gone, and whatever it had under way ended without an
    /// answer (a send under way may or may not have been queued).
    func daemonCrashed() {
        attachment = nil
        busy = false
        if let sendingEventID { context.ledger.markAmbiguous(sendingEventID) }
        sendingEventID = nil
    }

    // MARK: - Events

    /// A sink for one attach: events carry that attach's generation.
    /// `store`: the attached daemon's, read to check that each inbox item's hand-out is durable.
    func makeSink(store: DeliveryStore?) -> SimulatedSink { SimulatedSink(app: self, generation: generation, store: store) }

    func handle(_ event: DeliveryEvent, generation: Int, store: DeliveryStore?) {
        switch event {
        case .envelope(let from, let inboxID, let redelivery, let mode, let encoded):
            if inboxID != 0, let store { checkDurable(inboxID, in: store) }
            envelopeArrived(from: from, inboxID: inboxID, redelivery: redelivery, mode: mode, encoded: encoded, generation: generation)
        case .session(let record, _):
            if context.removedDaemon != daemon { context.fail(context.checker.checkSession(record.sessionID, status: record.status, at: daemon)) }
        case .anchor(let from, let sessionID, _, let revision, let anchor):
            anchorArrived(from: from, sessionID: sessionID, revision: revision, anchor: anchor)
        case .snapshotRequest(let from, _):
            context.note("\(name) asked for a snapshot by \(from.prefix(6))")
        case .snapshot, .reachability, .watermark:
            break
        }
    }

    /// The item's delivery must be recorded in the store before it reaches the app (a row that
    /// is gone was acknowledged through an earlier copy: nothing to check).
    private func checkDurable(_ inboxID: Int64, in store: DeliveryStore) {
        guard let entry = try? store.inbox.entries(ids: [InboxID(rawValue: inboxID)]).first, entry.deliveryCount == 0 else { return }
        context.fail([SimulationViolation(.handOutNotDurable, "\(name) got inbox \(inboxID) before its hand-out was recorded")])
    }

    private func envelopeArrived(from: String, inboxID: Int64, redelivery: Bool, mode: UInt8, encoded: [UInt8], generation: Int) {
        guard let envelope = try? SessionWireCodec.decodeEnvelope(encoded) else {
            context.fail([SimulationViolation(.stuck, "\(name) got an envelope that does not decode")])
            return
        }
        let eventID = envelope.metadata.eventID
        let delivery = SimulationLedger.Delivery(at: context.clock.nanoseconds, inboxID: inboxID, redelivery: redelivery,
                                                 attachment: generation, from: context.daemon(named: from))
        // The router makes the closing envelope of `session.close` with a system-random event
        // ID: named by its kind, so a replay's trace stays the same.
        let label = context.ledger.send(eventID) == nil ? envelope.metadata.payloadType : String(eventID.uuidString.prefix(8))
        context.note("\(name) got \(label) from d\(context.daemon(named: from) ?? -1) "
                     + "mode \(mode) inbox \(inboxID)\(redelivery ? " (redelivery)" : "")")
        context.fail(context.checker.checkDelivery(eventID, to: daemon, delivery, ledger: context.ledger))
        if daemon == context.removedDaemon, let knownAt = context.removalKnownAt, let sent = context.ledger.send(eventID),
           sent.sender != daemon, sent.sentAt > knownAt {
            context.fail([SimulationViolation(.removedDeviceGotItem,
                "removed d\(daemon) got d\(sent.sender)'s \(String(eventID.uuidString.prefix(8))), sent \((sent.sentAt - knownAt) / 1_000_000) ms after every member knew")])
        }
        context.ledger.recordDelivery(eventID, to: daemon, delivery)
        context.itemsDelivered += 1
        received += 1
        if inboxID != 0, !unacknowledged.contains(where: { $0.inboxID == inboxID }) {
            unacknowledged.append((inboxID, eventID))
        }
        guard envelope.metadata.payloadType == engine.eventPayloadType, envelope.metadata.sessionID == session,
              let typed = try? envelope.typed(as: Int.self) else { return }
        do {
            if case .snapshotRequired(let expected, let got) = try engine.receive(typed) {
                context.fail([SimulationViolation(.enginesDiverged,
                    "\(name)'s engine expected sequence \(expected) from \(envelope.metadata.sourcePeerID), got \(got)")])
            }
        } catch {
            context.fail([SimulationViolation(.enginesDiverged, "\(name)'s engine refused an event: \(error)")])
        }
    }

    private func anchorArrived(from: String, sessionID: UUID, revision: UInt64, anchor: SessionTimerAnchor) {
        guard let set = context.anchorsSet["\(sessionID)/\(revision)"] else {
            context.fail([SimulationViolation(.anchorDisagrees, "\(name) got an anchor revision \(revision) nobody set")])
            return
        }
        guard context.offsetKnown(daemon, set.setter) else {
            context.anchorsBeforeOffset += 1
            context.note("\(name) got d\(set.setter)'s anchor before its node measured d\(set.setter)'s clock offset")
            return
        }
        // The offset estimate errs by at most half the worst link asymmetry, or by at most its
        // own stated bound when its best round trip queued behind other traffic on the stream.
        let tolerance = context.anchorTolerance + max(Double(context.linkAsymmetry()) / 2e9, context.offsetErrorBound(daemon, set.setter))
        context.fail(context.checker.checkAnchor(receivedStart: anchor.startedAt.timeIntervalSince1970, at: daemon,
                                                 setStart: set.start, setter: set.setter, skews: context.skews,
                                                 tolerance: tolerance))
    }

    /// Submits a value to the engine and queues its envelope for sending (reliable, every peer).
    func submit(_ value: Int) -> AnySessionSyncEnvelope? {
        let wall = Date(timeIntervalSince1970: Double(SimulatedMeshClock.epochNanoseconds) / 1e9 + context.clock.milliseconds / 1e3)
        guard let typed = try? engine.submitLocal(value, at: wall), let envelope = try? AnySessionSyncEnvelope(typed) else {
            return nil
        }
        submittedTotal &+= value
        unsent.append(envelope)
        return envelope
    }

    /// A realtime envelope (not for the engine: realtime may be lost by design).
    func realtimeEnvelope() -> AnySessionSyncEnvelope {
        let metadata = SessionSyncMetadata(sessionID: session, featureID: feature, sourcePeerID: "app-\(daemon)-\(feature)",
                                           eventID: realtimeIDs.next(), sequence: 0,
                                           causalTimestamp: Date(timeIntervalSince1970: 1_700_000_000), payloadType: "sim.live")
        return AnySessionSyncEnvelope(metadata: metadata, payload: Data([UInt8(truncatingIfNeeded: daemon)]))
    }
}

/// Forwards one attachment's events to its app, on the simulation's thread.
final class SimulatedSink: DeliveryEventSink, @unchecked Sendable {
    private weak var app: SimulatedApp?
    let generation: Int
    private let store: DeliveryStore?

    init(app: SimulatedApp, generation: Int, store: DeliveryStore?) {
        self.app = app
        self.generation = generation
        self.store = store
    }

    func emit(_ event: DeliveryEvent) { app?.handle(event, generation: generation, store: store) }
}
