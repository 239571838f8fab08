import Foundation
import MeshCrypto
import MeshCore
import SessionMesh

/// Timer anchors and delivery watermarks.
extension SessionDirectory {
    /// `DeliveryRouter.setAnchor`.
    func setAnchor(_ router: isolated DeliveryRouter, sessionID: UUID, featureID: String, revision: UInt64,
                   anchor: SessionTimerAnchor, ownerUID: UInt32?) async throws -> Bool {
        let record = DeliveryAnchorRecord(sessionID: sessionID, featureID: featureID, revision: revision, anchor: anchor)
        let store = router.store, at = router.wallNow(), bytes = record.encoded()
        let stored: Bool
        do {
            stored = try await router.worker.run {
                try store.sessions.putTimerAnchor(featureID: featureID, sessionID: sessionID, revision: revision, bytes: bytes, at: at,
                                                  ownerUID: ownerUID)
            }.isStored
        } catch let error as StoreError where error.limit?.isUIDShare == true {
            router.counters.anchorsUIDShareRefused &+= 1
            throw MeshError.queueFull(error.description)
        } catch {
            throw MeshError.store(error)
        }
        if stored {
            for peer in router.peerStates.keys.sorted() where router.peerStates[peer]?.active == true {
                router.transmit(.anchor(record), to: peer, path: .stream)
            }
        }
        return stored
    }

    /// A peer's anchor: rewritten into this clock with the estimated offset (peer minus local),
    /// stored in that peer's own row of the (feature, session) if newer (never over this
    /// device's anchor or another peer's; within the peer's share of anchors), handed to the
    /// apps of the feature as `from` that peer.
    ///
    /// An anchor with a negative or non-finite accumulated time is refused (counted): an app
    /// must never compute a negative elapsed time from it. The offset is the estimator's, which
    /// believes at most an hour either way.
    func anchorReceived(_ router: isolated DeliveryRouter, _ record: DeliveryAnchorRecord, from peer: DeviceID) async {
        router.counters.anchorsReceived &+= 1
        guard record.isUsable else {
            router.counters.anchorsRefused &+= 1
            router.warnPeerFault("refused a timer anchor with a negative accumulated time", peer: peer)
            return
        }
        router.refreshEstimate(peer)
        let local = record.inLocalClock(offsetNanoseconds: router.peerStates[peer]?.offsetNanoseconds)
        let store = router.store, at = router.wallNow(), bytes = local.encoded(), sessionID = local.sessionID
        let revision = local.revision, featureID = local.featureID, source = peer.description
        guard let result = try? await router.worker.run({
            try store.sessions.putTimerAnchor(featureID: featureID, sessionID: sessionID, from: source, revision: revision,
                                              bytes: bytes, at: at)
        }) else {
            router.counters.storeErrors &+= 1
            return
        }
        if case .refused = result {
            router.counters.anchorsOverLimit &+= 1
            router.warnPeerFault("refused a timer anchor: the peer's anchors are at their limit", peer: peer)
            return
        }
        guard result.isStored else { return }
        router.emit(.anchor(from: peer.description, sessionID: local.sessionID, featureID: local.featureID,
                            revision: local.revision, anchor: local.anchor), feature: local.featureID)
    }

    /// `DeliveryRouter.setWatermark`.
    func setWatermark(_ router: isolated DeliveryRouter, sessionID: UUID, featureID: String, peer: String,
                      sequence: UInt64) async throws {
        guard sequence <= UInt64(Int64.max) else {
            throw MeshError.invalidArgument("watermark.set: sequence must be at most \(Int64.max)")
        }
        let target = try router.resolvePairedPeer(peer)
        router.ensurePeer(target)
        guard router.peerStates[target]?.watermarks.set(sessionID: sessionID, featureID: featureID, sequence: sequence) == true
        else { return }
        persistWatermark(router, peer: target, sessionID: sessionID, direction: .sent, featureID: featureID, sequence: sequence)
        if router.peerStates[target]?.active == true {
            router.transmit(.watermark(sessionID: sessionID, featureID: featureID, sequence: sequence), to: target, path: .stream)
        }
    }

    /// A peer's watermark: raised, stored and handed to the feature's apps; refused (counted)
    /// past the per-peer maximum of sessions.
    func watermarkReceived(_ router: isolated DeliveryRouter, sessionID: UUID, featureID: String, sequence: UInt64,
                           from peer: DeviceID) {
        let maximum = router.options.maximumWatermarkSessionsPerPeer
        switch router.peerStates[peer]?.watermarks.received(sessionID: sessionID, featureID: featureID, sequence: sequence,
                                                            maximumSessions: maximum) {
        case nil, .stale?: return
        case .refused?:
            router.counters.watermarksRefused &+= 1
            router.warnPeerFault("refused a watermark: the peer has the maximum of sessions with one", peer: peer)
        case .raised?:
            persistWatermark(router, peer: peer, sessionID: sessionID, direction: .received, featureID: featureID, sequence: sequence)
            router.emit(.watermark(peer: router.key(peer), sessionID: sessionID, featureID: featureID, sequence: sequence),
                        feature: featureID)
        }
    }

    /// Writes a raised watermark to the store, off the caller's path (the store keeps the
    /// highest value, so the order of these writes does not matter).
    func persistWatermark(_ router: isolated DeliveryRouter, peer: DeviceID, sessionID: UUID,
                          direction: WatermarkRecord.Direction, featureID: String, sequence: UInt64) {
        guard sequence <= UInt64(Int64.max) else { return }
        let record = WatermarkRecord(peer: router.key(peer), sessionID: sessionID, direction: direction, featureID: featureID,
                                     sequence: sequence, updatedAt: router.wallNow())
        let store = router.store
        router.spawn { router in
            do {
                _ = try await router.worker.run { try store.peers.putWatermark(record) }
            } catch {
                router.noteStoreError(error, "could not store a delivery watermark")
            }
        }
    }

    /// Waits until the paired peers are registered and their stored watermarks loaded (once per
    /// router; `run()` and `attach` both call it, whichever comes first starts it).
    func pairedPeersReady(_ router: isolated DeliveryRouter) async {
        if let load = watermarkLoad {
            await load.value
            return
        }
        let load = Task(executorPreference: router.taskExecutor) { await router.hop { await $0.directory.loadPairedPeers($0) } }
        watermarkLoad = load
        await load.value
    }

    /// Registers every paired peer and merges its stored watermarks into its state (only ever
    /// raising them).
    func loadPairedPeers(_ router: isolated DeliveryRouter) async {
        for device in router.channels.pairedDevices() { router.ensurePeer(device.deviceID) }
        let store = router.store
        let records: [WatermarkRecord]
        do {
            records = try await router.worker.run { try store.peers.watermarks() }
        } catch {
            router.noteStoreError(error, "could not read the stored delivery watermarks")
            return
        }
        for record in records {
            if let peer = router.peersByKey[record.peer] { router.peerStates[peer]?.watermarks.merge(record) }
        }
    }

    /// The watermarks peers reported for `features`, as events for a newly attached app.
    func currentWatermarks(_ router: isolated DeliveryRouter, features: Set<String>, sessionID: UUID?) -> [DeliveryEvent] {
        router.peerStates.sorted { $0.key < $1.key }.flatMap { peer, state in
            state.watermarks.current(features: features, sessionID: sessionID).map {
                DeliveryEvent.watermark(peer: router.key(peer), sessionID: $0.sessionID, featureID: $0.mark.featureID,
                                        sequence: $0.mark.sequence)
            }
        }
    }
}
