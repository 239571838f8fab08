import Foundation
import MeshCrypto
import MeshCore
import SessionMesh

/// The session directory, closing, timer anchors, watermarks and snapshots: the work is the
/// directory's (`SessionDirectory`).
extension DeliveryRouter {
    /// `payloadType` of the closing envelope and snapshot `session.close` publishes.
    public static let sessionClosedPayloadType = SnapshotSlots.sessionClosedPayloadType

    /// Announces or updates a session of this device and replicates it to active peers (and to
    /// the others on their next activation). Throws `session-closed` for a closed session.
    ///
    /// `ownerUID`: the announcing local uid (the local API passes the connection's); a new row
    /// counts toward its share (`uid_max_sessions`; over it: `queue-full`). Nil (tests, the
    /// simulator) counts toward none.
    public func announceSession(sessionID: UUID, featureID: String, owner: String, status: String,
                                ownerUID: UInt32? = nil) async throws {
        try await directory.announceSession(self, sessionID: sessionID, featureID: featureID, owner: owner, status: status,
                                            ownerUID: ownerUID)
    }

    /// Closes a session: directory row `closed`, a closing envelope queued reliably for every
    /// paired device, a closing snapshot in the outbound slot (`SessionClosing`). Returns once
    /// the envelope was acknowledged by the reachable peers (within `closeWait`) — `delivered`
    /// — or is durably queued for the others — `queued`. `ownerUID`: the closing local uid;
    /// closing a session with no row creates one, which counts toward its share
    /// (`uid_max_sessions`; over it: `queue-full`, nothing done).
    public func closeSession(sessionID: UUID, featureID: String,
                             ownerUID: UInt32? = nil) async throws -> (delivered: [String], queued: [String]) {
        try await directory.closeSession(self, sessionID: sessionID, featureID: featureID, ownerUID: ownerUID)
    }

    /// Waits for every one of `peers` at once until its outbox no longer holds `eventID` (it
    /// acknowledged the item), each bounded by `closeWait`; returns those that did in time.
    func waitUntilDelivered(_ eventID: UUID, to peers: [DeviceID]) async -> Set<DeviceID> {
        await withTaskGroup(of: DeviceID?.self) { group in
            for peer in peers {
                group.addTask { await self.waitUntilDelivered(eventID, to: peer) ? peer : nil }
            }
            var delivered = Set<DeviceID>()
            for await peer in group {
                if let peer { delivered.insert(peer) }
            }
            return delivered
        }
    }

    private func waitUntilDelivered(_ eventID: UUID, to peer: DeviceID) async -> Bool {
        await directory.waitUntilDelivered(self, eventID, to: peer)
    }

    /// The directory, optionally of one feature, most recently updated first.
    public func sessions(featureID: String?) async throws -> [SessionRecord] {
        let store = self.store
        return try await worker.call { try store.sessions.list(featureID: featureID) }
    }

    /// The features holding a directory row or a timer anchor of `sessionID` (an indexed read).
    public func sessionFeatures(sessionID: UUID) async throws -> [String] {
        let store = self.store
        return try await worker.call { try store.sessions.features(of: sessionID) }
    }

    /// Stores a session's anchor (latest revision wins; instants in this device's clock) and
    /// forwards it. Returns whether it replaced the stored one. `ownerUID`: the setting local
    /// uid; a new anchor counts toward its share (`uid_max_anchors`; over it: `queue-full`).
    public func setAnchor(sessionID: UUID, featureID: String, revision: UInt64, anchor: SessionTimerAnchor,
                          ownerUID: UInt32? = nil) async throws -> Bool {
        try await directory.setAnchor(self, sessionID: sessionID, featureID: featureID, revision: revision, anchor: anchor,
                                      ownerUID: ownerUID)
    }

    /// This device's app processed `peer`'s events of the session up to `sequence`: stores and
    /// forwards it (monotonic: a lower value is ignored; resent on every activation, kept
    /// across restarts). Throws `invalid-argument` for a sequence the store cannot hold.
    public func setWatermark(sessionID: UUID, featureID: String, peer: String, sequence: UInt64) async throws {
        try await directory.setWatermark(self, sessionID: sessionID, featureID: featureID, peer: peer, sequence: sequence)
    }

    /// Stores `snapshot` in the outbound slot of its (feature, session) and pushes it.
    ///
    /// With no target it goes to every paired device as a push (shown to apps only when newer
    /// than their slot); with a target it goes as a reply (always shown, e.g. answering a
    /// request). Returns whether the slot took it (false: an equal or higher revision is there).
    /// `owner`: the publishing local uid (the local API passes the connection's); a new slot
    /// counts toward its share (`uid_max_slots`, `uid_max_slot_bytes`; over it: `queue-full`).
    /// Nil (tests, the simulator) counts toward none.
    public func publishSnapshot(_ snapshot: AnySessionSyncSnapshot, encoded: [UInt8],
                                to target: String?, owner: UInt32? = nil) async throws -> Bool {
        try await directory.publishSnapshot(self, snapshot, encoded: encoded, to: target, owner: owner)
    }

    /// The revision in this device's outbound slot of a feature (and session), if any.
    public func outboundRevision(featureID: String, sessionID: UUID?) async throws -> UInt64? {
        try await directory.snapshotSlots.outboundRevision(featureID: featureID, sessionID: sessionID)
    }

    /// The latest snapshot received from `peer` (nil: from any peer) for a feature (and session),
    /// readable while the peer is off. Without a session: the most recently updated slot.
    public func latestSnapshot(featureID: String, peer: String?, sessionID: UUID?) async throws
        -> (peer: String, encoded: [UInt8])? {
        let key: String? = if let peer, !peer.isEmpty { try resolvePairedPeer(peer).description } else { nil }
        return try await directory.snapshotSlots.latest(featureID: featureID, peer: key, sessionID: sessionID)
    }

    /// Asks `peer` (nil: every active peer) for a snapshot; the answer arrives as a snapshot event.
    public func requestSnapshot(sessionID: UUID, featureID: String, peer: String?) async throws {
        try await directory.requestSnapshot(self, sessionID: sessionID, featureID: featureID, peer: peer)
    }
}
