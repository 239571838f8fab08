import Foundation

/// Any bidirectional pipe that moves erased envelopes, snapshots and snapshot requests between
/// peers: the daemon client, the in-memory test transports, or WatchConnectivity elsewhere.
///
/// The ten requirements are the seed's. Streams are multicast by convention: every call to a
/// `receive…()` method returns a fresh stream that sees everything arriving after the call.
/// `to: nil` / `from: nil` means every peer of the session.
public protocol SessionSyncTransport: Sendable {
    /// This device.
    var localPeer: SessionPeer { get }
    /// What this transport can do.
    var capabilities: SessionTransportCapabilities { get }
    /// Sends an envelope to one peer, or to all when `peer` is `nil`.
    func send(_ envelope: AnySessionSyncEnvelope, mode: SessionDeliveryMode, to peer: SessionPeer?) async throws
    /// Sends a snapshot; with ``SessionDeliveryMode/latestSnapshot`` it replaces the last one published.
    func sendSnapshot(_ snapshot: AnySessionSyncSnapshot, mode: SessionDeliveryMode, to peer: SessionPeer?) async throws
    /// Asks one peer (or all) for a snapshot of `sessionID`.
    func requestSnapshot(sessionID: UUID, from peer: SessionPeer?) async throws
    /// Envelopes arriving from peers.
    func receiveEnvelopes() -> AsyncStream<AnySessionSyncEnvelope>
    /// Snapshots arriving from peers.
    func receiveSnapshots() -> AsyncStream<AnySessionSyncSnapshot>
    /// Snapshot requests arriving from peers; answer with ``sendSnapshot(_:mode:to:)``.
    func receiveSnapshotRequests() -> AsyncStream<SessionSnapshotRequest>
    /// Reachability changes of peers.
    func reachabilityChanges() -> AsyncStream<SessionPeerReachability>
    /// The most recent snapshot a peer published in ``SessionDeliveryMode/latestSnapshot`` mode
    /// for `featureID`, read synchronously (the recovery surface of a peer waking mid-session).
    func latestPeerSnapshot(featureID: String) -> AnySessionSyncSnapshot?
}
