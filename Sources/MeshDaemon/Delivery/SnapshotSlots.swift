import Foundation
import MeshCore
import SessionMesh

/// The latest-state slots and their rules: an outbound slot per (feature, session) holds the
/// latest revision this device published, an inbound slot per (peer, feature, session) the
/// latest one received from that peer.
///
/// - A lower or equal revision never replaces a higher one (the store's compare-and-put).
/// - A closed session is never revived: publishing to it is refused (`session-closed`) and a
///   snapshot of it from a peer is not stored (a reply is still shown to the apps that asked),
///   except the closing snapshot `session.close` publishes (payload type
///   `sessionClosedPayloadType`).
/// - A push (no target) goes out only when its slot took it; a reply (to a named peer) always
///   goes out, and a received reply is always shown, even when its slot held that revision.
/// - A read or a request is answered from the most recently updated matching slot, found by an
///   indexed read of its key (feature, session, peer), never by reading the whole table.
/// - A peer's new slot must fit its share and the total of inbound slots (`PeerStateLimits`):
///   one over a limit is refused (counted by the router), never stored.
///
/// Holds only the store and its worker, no router state: the router sends what `publish`
/// returns to each peer as that peer's state routes it (`DeliveryPeerState.routeSnapshot`),
/// and emits what `receive` accepts. Its calls suspend on the caller's executor
/// (`nonisolated(nonsending)`, as `StoreWorker.run`): from the router, no hop off its loop.
struct SnapshotSlots: Sendable {
    /// `payloadType` of the closing envelope and snapshot `session.close` publishes.
    static let sessionClosedPayloadType = "sessionmesh.session.closed"

    let store: DeliveryStore
    let worker: StoreWorker

    /// Whether a publish to `target` is a reply: a target that is not nil, empty or "all".
    static func isReply(to target: String?) -> Bool {
        target.map { !$0.isEmpty && $0 != "all" } ?? false
    }

    /// Stores `snapshot` (encoded as `encoded`) in its outbound slot at the wall time `at`.
    /// Returns whether the slot took it, and the message for the peers (nil: a push whose slot
    /// held an equal or higher revision, which is not sent). Throws `session-closed` for a
    /// closed session (not for its closing snapshot), `queue-full` when `owner`'s share of the
    /// outbound slots is full (`uid_max_slots`, `uid_max_slot_bytes`), and any other store error
    /// as `MeshError.store`.
    nonisolated(nonsending) func publish(_ snapshot: AnySessionSyncSnapshot, encoded: [UInt8], isReply: Bool,
                                         at: Date, owner: UInt32? = nil) async throws -> (stored: Bool, message: [UInt8]?) {
        let metadata = snapshot.metadata, store = self.store
        if metadata.payloadType != Self.sessionClosedPayloadType,
           let record = try? await worker.run({ try store.sessions.record(featureID: metadata.featureID, id: metadata.sessionID) }),
           record.status == "closed" {
            throw MeshError.sessionClosed(metadata.sessionID.uuidString)
        }
        let stored: Bool
        do {
            stored = try await worker.run {
                try store.slots.putOutbound(featureID: metadata.featureID, sessionID: metadata.sessionID,
                                            revision: snapshot.revision, bytes: encoded, at: at, ownerUID: owner)
            }
        } catch let error as StoreError where error.limit?.isUIDShare == true {
            throw MeshError.queueFull(error.description)
        } catch {
            throw MeshError.store(error)
        }
        guard stored || isReply else { return (false, nil) }
        return (stored, (isReply ? DeliveryMessage.snapshotReply(encoded) : .snapshotPush(encoded)).encode())
    }

    /// A received snapshot message's body; nil when malformed (a revision the store cannot
    /// hold, above `Int64.max`, is malformed too).
    static func decode(_ bytes: [UInt8]) -> AnySessionSyncSnapshot? {
        guard let snapshot = try? SessionWireCodec.decodeSnapshot(bytes), snapshot.revision <= UInt64(Int64.max) else {
            return nil
        }
        return snapshot
    }

    /// Stores a snapshot received from `peer` (its store key) in its inbound slot at `at`.
    /// Returns what the store did (`.stale` also for a push of a closed session: not stored)
    /// and whether the attached apps see it: the slot took it, or it is a reply that was not
    /// refused by a limit. Throws store errors.
    nonisolated(nonsending) func receive(_ snapshot: AnySessionSyncSnapshot, bytes: [UInt8], from peer: String,
                                         isReply: Bool, at: Date) async throws -> (result: StorePutResult, shown: Bool) {
        let metadata = snapshot.metadata, store = self.store
        let result = try await worker.run { () throws -> StorePutResult in
            if metadata.payloadType != Self.sessionClosedPayloadType,
               let record = try store.sessions.record(featureID: metadata.featureID, id: metadata.sessionID),
               record.status == "closed" {
                return .stale
            }
            return try store.slots.putInbound(peer: peer, featureID: metadata.featureID, sessionID: metadata.sessionID,
                                              revision: snapshot.revision, bytes: bytes, at: at)
        }
        if case .refused = result { return (result, false) }
        return (result, result.isStored || isReply)
    }

    /// The revision in the outbound slot of a feature (and session), if any.
    nonisolated(nonsending) func outboundRevision(featureID: String, sessionID: UUID?) async throws -> UInt64? {
        let store = self.store
        return try await worker.call { try store.slots.outbound(featureID: featureID, sessionID: sessionID)?.revision }
    }

    /// The latest snapshot received from `peer` (its store key; nil: any peer) for a feature
    /// (and session): one indexed read. Throws store errors as `MeshError.store`.
    nonisolated(nonsending) func latest(featureID: String, peer: String?,
                                        sessionID: UUID?) async throws -> (peer: String, encoded: [UInt8])? {
        let store = self.store
        let slot = try await worker.call { try store.slots.latestInbound(featureID: featureID, peer: peer, sessionID: sessionID) }
        return slot.map { ($0.peer ?? "", $0.bytes) }
    }

    /// The encoded snapshot answering a peer's `request` from the outbound slots (when no app
    /// of the feature is attached): the most recently updated slot of the request's session
    /// (and of its feature when it names one), one indexed read; nil when none matches or the
    /// store fails.
    nonisolated(nonsending) func answer(_ request: SessionSnapshotRequest) async -> [UInt8]? {
        let store = self.store
        let slot = try? await worker.run { try store.slots.latestOutbound(sessionID: request.sessionID, featureID: request.featureID) }
        return (slot ?? nil)?.bytes
    }
}

extension DeliveryPeerState {
    /// Where a published snapshot goes for this peer now.
    enum SnapshotRoute: Sendable, Equatable {
        /// The channel is active: pushed now.
        case push
        /// Buffered before the first activation (`collapsed`: it replaced one of its feature).
        case buffered(collapsed: Bool)
        /// Inactive after an activation: its stored slot is pushed on the next activation.
        case onActivation
    }

    /// Routes a published snapshot `message` of `featureID` (buffering it when the channel was
    /// never active). Mutating so the router calls it in place, through its dictionary.
    mutating func routeSnapshot(_ message: [UInt8], featureID: String) -> SnapshotRoute {
        if active { return .push }
        guard !everActivated else { return .onActivation }
        let before = pending.collapsedSnapshotCount
        pending.enqueue(snapshot: message, forKey: featureID)
        return .buffered(collapsed: pending.collapsedSnapshotCount > before)
    }
}
