import Foundation
import MeshCrypto
import MeshCore
import SessionMesh

/// Latest-state slots and snapshot requests.
extension DeliveryRouter {
    /// `payloadType` of the closing envelope and snapshot `session.close` publishes.
    public static let sessionClosedPayloadType = SnapshotSlots.sessionClosedPayloadType

    /// The slots and their rules (`SnapshotSlots`), over this router's store.
    var snapshotSlots: SnapshotSlots { SnapshotSlots(store: store, worker: worker) }

    /// Stores `snapshot` in the outbound slot of its (feature, session) and pushes it.
    ///
    /// With no target it goes to every paired device as a push (shown to apps only when newer
    /// than their slot); with a target it goes as a reply (always shown, e.g. answering a
    /// request). Returns whether the slot took it (false: an equal or higher revision is there).
    public func publishSnapshot(_ snapshot: AnySessionSyncSnapshot, encoded: [UInt8],
                                to target: String?) async throws -> Bool {
        let peers = try await targets(target)
        let (stored, message) = try await snapshotSlots.publish(snapshot, encoded: encoded,
                                                                isReply: SnapshotSlots.isReply(to: target), at: wallNow())
        guard let message else { return false }
        for peer in peers {
            guard let slot = peerStates.index(forKey: peer) else { continue }
            switch peerStates.values[slot].routeSnapshot(message, featureID: snapshot.metadata.featureID) {
            case .push: if await transmitRaw(message, to: peer) { counters.snapshotsPushed &+= 1 }
            case .buffered(let collapsed): if collapsed { counters.pendingCollapsed &+= 1 }
            case .onActivation: break
            }
        }
        return stored
    }

    /// The revision in this device's outbound slot of a feature (and session), if any.
    public func outboundRevision(featureID: String, sessionID: UUID?) async throws -> UInt64? {
        try await snapshotSlots.outboundRevision(featureID: featureID, sessionID: sessionID)
    }

    /// A snapshot from a peer: into its inbound slot (see `SnapshotSlots.receive`), then to the
    /// attached apps of the feature.
    func snapshotReceived(_ bytes: [UInt8], from peer: DeviceID, isReply: Bool) async {
        guard let snapshot = SnapshotSlots.decode(bytes) else {
            counters.malformed &+= 1
            return
        }
        counters.snapshotsReceived &+= 1
        let key = peer.description
        do {
            guard try await snapshotSlots.receive(snapshot, bytes: bytes, from: key, isReply: isReply, at: wallNow()) else {
                counters.snapshotsStale &+= 1
                return
            }
        } catch {
            noteStoreError(error, "could not store a received snapshot")
            return
        }
        emit(.snapshot(from: key, encoded: bytes), feature: snapshot.metadata.featureID)
    }

    /// The latest snapshot received from `peer` (nil: from any peer) for a feature (and session),
    /// readable while the peer is off. Without a session: the most recently updated slot.
    public func latestSnapshot(featureID: String, peer: String?, sessionID: UUID?) async throws
        -> (peer: String, encoded: [UInt8])? {
        let key: String? = if let peer, !peer.isEmpty { try resolvePairedPeer(peer).description } else { nil }
        return try await snapshotSlots.latest(featureID: featureID, peer: key, sessionID: sessionID)
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
        guard let answer = await snapshotSlots.answer(request) else { return }
        counters.snapshotRequestsAnsweredFromSlot &+= 1
        // Not awaited: this runs on the path that takes every peer's messages, and a peer that
        // does not read its connection must not hold that up. When its connection does not
        // drain, the reply is skipped (the requester may ask again).
        let reply = DeliveryMessage.snapshotReply(answer).encode()
        _ = channels.sendStreamIfDraining(reply, to: peer)
    }
}
