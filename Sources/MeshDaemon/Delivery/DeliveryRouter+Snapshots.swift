import Foundation
import MeshCrypto
import MeshCore
import SessionMesh

/// Latest-state slots and snapshot requests.
extension DeliveryRouter {
    /// `payloadType` of the closing envelope and snapshot `session.close` publishes.
    public static let sessionClosedPayloadType = "sessionmesh.session.closed"

    /// Stores `snapshot` in the outbound slot of its (feature, session) and pushes it.
    ///
    /// With no target it goes to every paired device as a push (shown to apps only when newer
    /// than their slot); with a target it goes as a reply (always shown, e.g. answering a
    /// request). Returns whether the slot took it (false: an equal or higher revision is there).
    public func publishSnapshot(_ snapshot: AnySessionSyncSnapshot, encoded: [UInt8],
                                to target: String?) async throws -> Bool {
        let metadata = snapshot.metadata
        let peers = try await targets(target)
        let store = self.store, at = wallNow()
        if metadata.payloadType != Self.sessionClosedPayloadType,
           let record = try? await worker.run({ try store.sessions.record(id: metadata.sessionID) }), record.status == "closed" {
            throw MeshError.sessionClosed(metadata.sessionID.uuidString)
        }
        let stored: Bool
        do {
            stored = try await worker.run {
                try store.slots.putOutbound(featureID: metadata.featureID, sessionID: metadata.sessionID,
                                          revision: snapshot.revision, bytes: encoded, at: at)
            }
        } catch {
            throw MeshError.store(error)
        }
        let isReply = target.map { !$0.isEmpty && $0 != "all" } ?? false
        guard stored || isReply else { return false }
        let message = (isReply ? DeliveryMessage.snapshotReply(encoded) : .snapshotPush(encoded)).encode()
        for peer in peers {
            guard let state = peerStates[peer] else { continue }
            if state.active {
                if await transmitRaw(message, to: peer) { counters.snapshotsPushed &+= 1 }
            } else if !state.everActivated {
                let before = state.pending.collapsedSnapshotCount
                peerStates[peer]?.pending.enqueue(snapshot: message, forKey: metadata.featureID)
                if (peerStates[peer]?.pending.collapsedSnapshotCount ?? before) > before { counters.pendingCollapsed &+= 1 }
            }
            // Otherwise the stored slot is pushed on the next activation.
        }
        return stored
    }

    /// The revision in this device's outbound slot of a feature (and session), if any.
    public func outboundRevision(featureID: String, sessionID: UUID?) async throws -> UInt64? {
        let store = self.store
        do { return try await worker.run { try store.slots.outbound(featureID: featureID, sessionID: sessionID)?.revision } } catch {
            throw MeshError.store(error)
        }
    }

    /// A snapshot from a peer: into its inbound slot (a lower revision never replaces a higher
    /// one; a closed session is not revived), then to the attached apps of the feature.
    func snapshotReceived(_ bytes: [UInt8], from peer: DeviceID, isReply: Bool) async {
        // A revision the store cannot hold is malformed here, not a store error per message.
        guard let snapshot = try? SessionWireCodec.decodeSnapshot(bytes), snapshot.revision <= UInt64(Int64.max) else {
            counters.malformed &+= 1
            return
        }
        counters.snapshotsReceived &+= 1
        let metadata = snapshot.metadata, store = self.store, key = peer.description, at = wallNow()
        let stored: Bool
        do {
            stored = try await worker.run {
                if metadata.payloadType != Self.sessionClosedPayloadType,
                   let record = try store.sessions.record(id: metadata.sessionID), record.status == "closed" {
                    return false
                }
                return try store.slots.putInbound(peer: key, featureID: metadata.featureID, sessionID: metadata.sessionID,
                                                revision: snapshot.revision, bytes: bytes, at: at)
            }
        } catch {
            noteStoreError(error, "could not store a received snapshot")
            return
        }
        guard stored || isReply else {
            counters.snapshotsStale &+= 1
            return
        }
        emit(.snapshot(from: key, encoded: bytes), feature: metadata.featureID)
    }

    /// The latest snapshot received from `peer` (nil: from any peer) for a feature (and session),
    /// readable while the peer is off. Without a session: the most recently updated slot.
    public func latestSnapshot(featureID: String, peer: String?, sessionID: UUID?) async throws
        -> (peer: String, encoded: [UInt8])? {
        let key: String? = if let peer, !peer.isEmpty { try resolvePairedPeer(peer).description } else { nil }
        let store = self.store
        let slots: [SnapshotSlot]
        do { slots = try await worker.run { try store.slots.listInbound(peer: key) } } catch { throw MeshError.store(error) }
        let best = slots.filter { $0.featureID == featureID && (sessionID == nil || $0.sessionID == sessionID) }
            .max { $0.updatedAt < $1.updatedAt }
        return best.map { ($0.peer ?? "", $0.bytes) }
    }

    /// Asks `peer` (nil: every active peer) for a snapshot; the answer arrives as a snapshot event.
    public func requestSnapshot(sessionID: UUID, featureID: String, peer: String?) async throws {
        let peers = try await targets(peer)
        let named = peer.map { !$0.isEmpty } ?? false
        for target in peers {
            guard peerStates[target]?.active == true else {
                if named { throw MeshError.peerNotActive(target.description) }
                continue
            }
            let request = SessionSnapshotRequest(sessionID: sessionID, featureID: featureID,
                                                 requestingPeerID: localDeviceID.description,
                                                 targetPeerID: target.description)
            guard let encoded = try? SessionWireCodec.encode(request) else {
                throw MeshError.invalidArgument("snapshot.request: the featureID is too long")
            }
            await transmit(.snapshotRequest(encoded), to: target, path: .stream)
        }
    }

    /// A peer's app wants a snapshot: to our attached apps of the feature, else from our slot.
    func snapshotRequestReceived(_ bytes: [UInt8], from peer: DeviceID) async {
        guard let request = try? SessionWireCodec.decodeSnapshotRequest(bytes) else {
            counters.malformed &+= 1
            return
        }
        if let feature = request.featureID {
            let sinks = sinks(for: feature)
            if !sinks.isEmpty {
                for sink in sinks { sink.emit(.snapshotRequest(from: peer.description, encoded: bytes)) }
                return
            }
        }
        let store = self.store
        let slot = try? await worker.run {
            try store.slots.listOutbound().filter {
                $0.sessionID == request.sessionID && (request.featureID == nil || $0.featureID == request.featureID)
            }.max { $0.updatedAt < $1.updatedAt }
        }
        guard let found = slot ?? nil else { return }
        counters.snapshotRequestsAnsweredFromSlot &+= 1
        // Not awaited: this runs on the path that takes every peer's messages, and a peer that
        // does not read its connection must not hold that up. When its connection does not
        // drain, the reply is skipped (the requester may ask again).
        let reply = DeliveryMessage.snapshotReply(found.bytes).encode()
        _ = channels.sendStreamIfDraining(reply, to: peer)
    }
}
