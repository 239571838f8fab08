import Foundation
import Synchronization

/// A single-peer in-memory transport: everything sent comes straight back on the same
/// transport's receive streams. For "submit and receive on one side" tests (e.g. that an own
/// echo is a duplicate).
///
/// Snapshots sent in ``SessionDeliveryMode/latestSnapshot`` mode are also kept per feature and
/// returned by ``latestPeerSnapshot(featureID:)``. Delivery is synchronous: an element is in the
/// stream's buffer when `send` returns.
public final class LoopbackSessionSyncTransport: SessionSyncTransport {
    /// This device.
    public let localPeer: SessionPeer
    /// Everything supported.
    public let capabilities: SessionTransportCapabilities = .all

    private let envelopes = StreamHub<AnySessionSyncEnvelope>()
    private let snapshots = StreamHub<AnySessionSyncSnapshot>()
    private let requests = StreamHub<SessionSnapshotRequest>()
    private let reachability = StreamHub<SessionPeerReachability>()
    private let latest = Mutex<[String: AnySessionSyncSnapshot]>([:])

    /// Creates a loopback transport for `localPeer`.
    public init(localPeer: SessionPeer) { self.localPeer = localPeer }

    /// Yields `envelope` on this transport's envelope streams.
    public func send(_ envelope: AnySessionSyncEnvelope, mode: SessionDeliveryMode, to peer: SessionPeer?) async throws {
        envelopes.yield(envelope)
    }

    /// Yields `snapshot` on this transport's snapshot streams (and keeps it when `latestSnapshot`).
    public func sendSnapshot(_ snapshot: AnySessionSyncSnapshot, mode: SessionDeliveryMode, to peer: SessionPeer?) async throws {
        if mode == .latestSnapshot { latest.withLock { $0[snapshot.metadata.featureID] = snapshot } }
        snapshots.yield(snapshot)
    }

    /// Yields a request from this peer on this transport's request streams.
    public func requestSnapshot(sessionID: UUID, from peer: SessionPeer?) async throws {
        requests.yield(SessionSnapshotRequest(sessionID: sessionID, requestingPeerID: localPeer.id, targetPeerID: peer?.id))
    }

    /// A new stream of envelopes sent after this call.
    public func receiveEnvelopes() -> AsyncStream<AnySessionSyncEnvelope> { envelopes.makeStream() }
    /// A new stream of snapshots sent after this call.
    public func receiveSnapshots() -> AsyncStream<AnySessionSyncSnapshot> { snapshots.makeStream() }
    /// A new stream of snapshot requests sent after this call.
    public func receiveSnapshotRequests() -> AsyncStream<SessionSnapshotRequest> { requests.makeStream() }
    /// A new stream of reachability changes (only those passed to ``simulateReachability(_:)``).
    public func reachabilityChanges() -> AsyncStream<SessionPeerReachability> { reachability.makeStream() }
    /// The last snapshot sent in `latestSnapshot` mode for `featureID`.
    public func latestPeerSnapshot(featureID: String) -> AnySessionSyncSnapshot? { latest.withLock { $0[featureID] } }

    /// Emits a reachability change on this transport's reachability streams.
    public func simulateReachability(_ change: SessionPeerReachability) { reachability.yield(change) }

    /// Ends every stream made so far.
    public func finish() {
        envelopes.finish()
        snapshots.finish()
        requests.finish()
        reachability.finish()
    }
}
