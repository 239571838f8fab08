import Foundation
import Synchronization

/// One peer's end of a ``ScenarioNetwork``; made by ``ScenarioNetwork/makeTransport(localPeer:)``.
///
/// Sends go into the network's flight list and arrive only when the test drives the network's
/// virtual clock. Arrivals are yielded on this transport's streams (each `receive…()` call makes
/// a new unbounded stream). Snapshots that arrive in ``SessionDeliveryMode/latestSnapshot`` mode
/// are kept per feature for ``latestPeerSnapshot(featureID:)``.
public final class ScenarioSessionSyncTransport: SessionSyncTransport {
    /// This device.
    public let localPeer: SessionPeer
    /// Everything supported.
    public let capabilities: SessionTransportCapabilities = .all

    let network: ScenarioNetwork
    let envelopeHub = StreamHub<AnySessionSyncEnvelope>()
    let snapshotHub = StreamHub<AnySessionSyncSnapshot>()
    let requestHub = StreamHub<SessionSnapshotRequest>()
    let reachabilityHub = StreamHub<SessionPeerReachability>()
    private let latest = Mutex<[String: AnySessionSyncSnapshot]>([:])

    init(localPeer: SessionPeer, network: ScenarioNetwork) {
        self.localPeer = localPeer
        self.network = network
    }

    /// Puts the envelope in flight to `peer` (or every other peer).
    /// - Throws: ``SessionWireError`` if it cannot be encoded.
    public func send(_ envelope: AnySessionSyncEnvelope, mode: SessionDeliveryMode, to peer: SessionPeer?) async throws {
        try network.enqueue(.envelope(envelope), from: localPeer, to: peer?.id, mode: mode)
    }

    /// Puts the snapshot in flight to `peer` (or every other peer).
    public func sendSnapshot(_ snapshot: AnySessionSyncSnapshot, mode: SessionDeliveryMode, to peer: SessionPeer?) async throws {
        try network.enqueue(.snapshot(snapshot), from: localPeer, to: peer?.id, mode: mode)
    }

    /// Puts a snapshot request from this peer in flight to `peer` (or every other peer).
    public func requestSnapshot(sessionID: UUID, from peer: SessionPeer?) async throws {
        let request = SessionSnapshotRequest(sessionID: sessionID, requestingPeerID: localPeer.id, targetPeerID: peer?.id)
        try network.enqueue(.snapshotRequest(request), from: localPeer, to: peer?.id, mode: .snapshotRequest)
    }

    /// A new stream of envelopes arriving after this call.
    public func receiveEnvelopes() -> AsyncStream<AnySessionSyncEnvelope> { envelopeHub.makeStream() }
    /// A new stream of snapshots arriving after this call.
    public func receiveSnapshots() -> AsyncStream<AnySessionSyncSnapshot> { snapshotHub.makeStream() }
    /// A new stream of snapshot requests arriving after this call.
    public func receiveSnapshotRequests() -> AsyncStream<SessionSnapshotRequest> { requestHub.makeStream() }
    /// A new stream of reachability changes (partitions, heals, reachability flips).
    public func reachabilityChanges() -> AsyncStream<SessionPeerReachability> { reachabilityHub.makeStream() }
    /// The newest snapshot that arrived in `latestSnapshot` mode for `featureID`.
    public func latestPeerSnapshot(featureID: String) -> AnySessionSyncSnapshot? { latest.withLock { $0[featureID] } }

    /// Hands an arrival to this transport's streams.
    func accept(_ delivery: ScenarioDelivery) {
        switch delivery.message {
        case let .envelope(envelope):
            envelopeHub.yield(envelope)
        case let .snapshot(snapshot):
            if delivery.mode == .latestSnapshot { latest.withLock { $0[snapshot.metadata.featureID] = snapshot } }
            snapshotHub.yield(snapshot)
        case let .snapshotRequest(request):
            requestHub.yield(request)
        }
    }

    /// Ends every stream made so far.
    public func finish() {
        envelopeHub.finish()
        snapshotHub.finish()
        requestHub.finish()
        reachabilityHub.finish()
    }
}
