import Foundation
import MeshCrypto
import MeshCore
import SessionMesh

/// Latest-state slots and snapshot requests.
extension SessionDirectory {
    /// `DeliveryRouter.publishSnapshot`.
    func publishSnapshot(_ router: isolated DeliveryRouter, _ snapshot: AnySessionSyncSnapshot, encoded: [UInt8],
                         to target: String?) async throws -> Bool {
        let peers = try await router.targets(target)
        let (stored, message) = try await snapshotSlots.publish(snapshot, encoded: encoded,
                                                                isReply: SnapshotSlots.isReply(to: target), at: router.wallNow())
        guard let message else { return false }
        for peer in peers {
            guard let slot = router.peerStates.index(forKey: peer) else { continue }
            switch router.peerStates.values[slot].routeSnapshot(message, featureID: snapshot.metadata.featureID) {
            case .push: if router.transmitRaw(message, to: peer) { router.counters.snapshotsPushed &+= 1 }
            case .buffered(let collapsed): if collapsed { router.counters.pendingCollapsed &+= 1 }
            case .onActivation: break
            }
        }
        return stored
    }

    /// A snapshot from a peer: into its inbound slot (see `SnapshotSlots.receive`), then to the
    /// attached apps of the feature.
    func snapshotReceived(_ router: isolated DeliveryRouter, _ bytes: [UInt8], from peer: DeviceID, isReply: Bool) async {
        guard let snapshot = SnapshotSlots.decode(bytes) else {
            router.counters.malformed &+= 1
            return
        }
        router.counters.snapshotsReceived &+= 1
        let key = peer.description
        do {
            guard try await snapshotSlots.receive(snapshot, bytes: bytes, from: key, isReply: isReply, at: router.wallNow()) else {
                router.counters.snapshotsStale &+= 1
                return
            }
        } catch {
            router.noteStoreError(error, "could not store a received snapshot")
            return
        }
        router.emit(.snapshot(from: key, encoded: bytes), feature: snapshot.metadata.featureID)
    }

    /// `DeliveryRouter.requestSnapshot`.
    func requestSnapshot(_ router: isolated DeliveryRouter, sessionID: UUID, featureID: String, peer: String?) async throws {
        let peers = try await router.targets(peer)
        let named = peer.map { !$0.isEmpty } ?? false
        for target in peers {
            guard router.peerStates[target]?.active == true else {
                if named { throw MeshError.peerNotActive(target.description) }
                continue
            }
            let request = SessionSnapshotRequest(sessionID: sessionID, featureID: featureID,
                                                 requestingPeerID: router.localDeviceID.description,
                                                 targetPeerID: target.description)
            guard let encoded = try? SessionWireCodec.encode(request) else {
                throw MeshError.invalidArgument("snapshot.request: the featureID is too long")
            }
            router.transmit(.snapshotRequest(encoded), to: target, path: .stream)
        }
    }

    /// A peer's app wants a snapshot: to our attached apps of the feature, else from our slot.
    func snapshotRequestReceived(_ router: isolated DeliveryRouter, _ bytes: [UInt8], from peer: DeviceID) async {
        guard let request = try? SessionWireCodec.decodeSnapshotRequest(bytes) else {
            router.counters.malformed &+= 1
            return
        }
        if let feature = request.featureID {
            let sinks = router.sinks(for: feature)
            if !sinks.isEmpty {
                for sink in sinks { sink.emit(.snapshotRequest(from: peer.description, encoded: bytes)) }
                return
            }
        }
        guard let answer = await snapshotSlots.answer(request) else { return }
        router.counters.snapshotRequestsAnsweredFromSlot &+= 1
        // Not awaited: this runs on the path that takes every peer's messages, and a peer that
        // does not read its connection must not hold that up. When its connection does not
        // drain, the reply is skipped (the requester may ask again).
        let reply = DeliveryMessage.snapshotReply(answer).encode()
        _ = router.channels.sendStreamIfDraining(reply, to: peer)
    }
}
