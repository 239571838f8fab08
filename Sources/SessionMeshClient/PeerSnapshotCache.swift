import SessionMesh

/// The newest snapshot per (peer, feature), as `DaemonSessionSyncTransport.latestPeerSnapshot`
/// reads it: a lower revision never replaces a higher one of the same peer and feature; across
/// peers the most recently accepted one is "latest".
struct PeerSnapshotCache: Sendable {
    private struct Slot: Sendable {
        var snapshot: AnySessionSyncSnapshot
        var acceptedAt: UInt64
    }

    private var slots: [String: [String: Slot]] = [:]
    private var clock: UInt64 = 0

    /// Stores `snapshot` from `peer` unless that peer's slot for the feature has a higher
    /// revision; returns whether it was stored.
    @discardableResult
    mutating func accept(peer: String, snapshot: AnySessionSyncSnapshot) -> Bool {
        let feature = snapshot.metadata.featureID
        if let existing = slots[feature]?[peer], existing.snapshot.revision > snapshot.revision { return false }
        clock += 1
        slots[feature, default: [:]][peer] = Slot(snapshot: snapshot, acceptedAt: clock)
        return true
    }

    /// The most recently accepted snapshot of `featureID` from any peer.
    func latest(featureID: String) -> AnySessionSyncSnapshot? {
        slots[featureID]?.values.max { $0.acceptedAt < $1.acceptedAt }?.snapshot
    }
}
