import Foundation
import MeshCrypto
import MeshCore
import NIOCore
import SessionMesh

/// The session directory and what the devices share per session: sessions announced, closed
/// (with the wait for the peers' acks of the closing item) and received; timer anchors;
/// delivery watermarks, with the paired peers registered and their stored watermarks loaded
/// once per router; latest-state snapshot slots and snapshot requests. docs/DELIVERY.md
/// describes the rules (`SessionDirectoryRow`, `SessionClosing`, `WatermarkBook`,
/// `SnapshotSlots` hold them).
///
/// Owns `closeSession`'s delivery waits, the load of the paired peers and the snapshot slots.
/// Each peer's watermarks stay in the router's peer table (`DeliveryPeerState`). Its methods
/// take the router `isolated`: they run on the router's executor, with no hop.
final class SessionDirectory {
    /// `closeSession` waiting for its closing item to leave a peer's outbox (`waitUntilDelivered`).
    var deliveryWaits = DeliveryWaits()
    /// Registering the paired peers with their stored watermarks (started by `run()` or the first attach).
    var watermarkLoad: Task<Void, Never>?
    /// The slots and their rules (`SnapshotSlots`), over the router's store.
    let snapshotSlots: SnapshotSlots
    /// Open sessions of removed owners that another member should have taken over, and since
    /// when (monotonic ns): this device takes them over after the fallback (`handOverPass`).
    var pendingHandOvers: [PendingHandOverKey: (row: SessionRecord, since: UInt64)] = [:]

    init(snapshotSlots: SnapshotSlots) {
        self.snapshotSlots = snapshotSlots
    }

    /// `DeliveryRouter.announceSession`.
    func announceSession(_ router: isolated DeliveryRouter, sessionID: UUID, featureID: String, owner: String,
                         status: String, ownerUID: UInt32?) async throws {
        try SessionDirectoryRow.checkAnnounced(status: status)
        let store = router.store
        let existing = try await router.worker.call { try store.sessions.record(featureID: featureID, id: sessionID) }
        let (record, change) = try SessionDirectoryRow(existing: existing)
            .announce(sessionID: sessionID, featureID: featureID, owner: owner, status: status, at: router.wallNow())
        try await putLocal(router, record, ownerUID: ownerUID)
        router.emit(.session(record, change: change), feature: featureID)
        for peer in router.peerStates.keys.sorted() where router.peerStates[peer]?.active == true {
            router.transmit(.session(DeliverySessionRecord(record)), to: peer, path: .stream)
        }
    }

    /// `DeliveryRouter.closeSession`.
    func closeSession(_ router: isolated DeliveryRouter, sessionID: UUID, featureID: String,
                      ownerUID: UInt32?) async throws -> (delivered: [String], queued: [String]) {
        let store = router.store, at = router.wallNow()
        let (existing, slot) = try await router.worker.call {
            (try store.sessions.record(featureID: featureID, id: sessionID),
             try store.slots.outbound(featureID: featureID, sessionID: sessionID))
        }
        let closing = try SessionClosing(sessionID: sessionID, featureID: featureID, existing: existing,
                                         slotRevision: slot?.revision, localDevice: router.localDeviceID.description,
                                         at: at, eventID: router.random.uuid())
        let record = closing.record
        try await putLocal(router, record, ownerUID: ownerUID)
        router.emit(.session(record, change: .closed), feature: featureID)
        let peers = router.peerStates.keys.sorted()
        try await router.sender.enqueueReliable(router, closing.item, for: peers)
        _ = try await publishSnapshot(router, closing.snapshot, encoded: closing.encodedSnapshot, to: nil, owner: nil)
        let active = peers.filter { router.peerStates[$0]?.active == true }
        for peer in active {
            router.transmit(.session(DeliverySessionRecord(record)), to: peer, path: .stream)
        }
        // All peers at once, so peers that do not acknowledge cost one `closeWait` in all.
        let acknowledged = await router.waitUntilDelivered(closing.item.eventID, to: active)
        let delivered = peers.filter { acknowledged.contains($0) }.map(\.description)
        let queued = peers.filter { !acknowledged.contains($0) }.map(\.description)
        return (delivered, queued)
    }

    /// Waits (bounded by `closeWait`, on the loop's clock) until the outbox no longer holds
    /// `eventID` for `peer`: checked now and after each delete of the peer's acknowledged items.
    func waitUntilDelivered(_ router: isolated DeliveryRouter, _ eventID: UUID, to peer: DeviceID) async -> Bool {
        guard !router.consumer.inbound.stopping else { return false }
        return await withCheckedContinuation { continuation in
            // Registered before the first check: a delete committed during it checks again.
            let id = deliveryWaits.add(eventID, peer: peer, continuation: continuation)
            let deadline = router.loop.scheduleTask(in: .nanoseconds(Int64(router.options.closeWait * 1e9))) { [router] in
                router.onLoop { $0.directory.deliveryWaits.finish(id, delivered: false) }
            }
            deliveryWaits.setDeadline(deadline, of: id)
            router.spawn { await $0.directory.checkDeliveryWaits($0, on: peer) }
        }
    }

    /// Ends the waits on `peer` whose item has left its outbox.
    func checkDeliveryWaits(_ router: isolated DeliveryRouter, on peer: DeviceID) async {
        let waiting = deliveryWaits.waiting(on: peer)
        guard !waiting.isEmpty else { return }
        let store = router.store, key = router.key(peer)
        guard let queued = try? await router.worker.run({ Set(try store.outbox.list(peer: key).map(\.eventID)) }) else { return }
        for (id, eventID) in waiting where !queued.contains(eventID) { deliveryWaits.finish(id, delivered: true) }
    }

    /// Outbound slots, local sessions, this device's anchors and watermarks: what a peer gets on
    /// every activation (`ActivationResend`). A peer's anchors are never relayed: each device
    /// sends only its own, under its own name.
    func resendState(_ router: isolated DeliveryRouter, to peer: DeviceID) async {
        let store = router.store
        guard let (slots, sessions, anchors) = try? await router.worker.run({
            (try store.slots.listOutbound(), try store.sessions.list(), try store.sessions.listTimerAnchors(localOnly: true))
        }) else {
            router.counters.storeErrors &+= 1
            return
        }
        for message in ActivationResend(slots: slots, sessions: sessions, anchors: anchors).messages {
            guard router.transmit(message, to: peer, path: .stream) else { continue }
            if case .snapshotPush = message { router.counters.snapshotsPushed &+= 1 }
        }
        resendHandOvers(router, sessions, to: peer)
        for message in router.peerStates[peer]?.watermarks.sentMessages ?? [] {
            router.transmit(message, to: peer, path: .stream)
        }
    }

    /// Stores a row of this device for `ownerUID` (`StoreSessions.put`): a uid at its share of
    /// the session rows gets `queue-full` naming it (counted), any other store error `store-failed`.
    private func putLocal(_ router: isolated DeliveryRouter, _ record: SessionRecord, ownerUID: UInt32?) async throws {
        let store = router.store
        do {
            _ = try await router.worker.run { try store.sessions.put(record, ownerUID: ownerUID) }
        } catch let error as StoreError where error.limit?.isUIDShare == true {
            router.counters.sessionsUIDShareRefused &+= 1
            throw MeshError.queueFull(error.description)
        } catch {
            throw MeshError.store(error)
        }
    }

    /// A peer's session row: stored when it changes the directory (only over a row the same
    /// peer sent, within its share of rows: `StoreSessions.putFromPeer`), then to the feature's apps.
    func sessionReceived(_ router: isolated DeliveryRouter, _ message: DeliverySessionRecord, from peer: DeviceID) async {
        router.counters.sessionsReceived &+= 1
        let record = message.record(sourcePeer: peer.description), store = router.store
        guard let (existing, result) = try? await router.worker.run({
            let existing = try store.sessions.record(featureID: record.featureID, id: record.sessionID)
            return (existing, try store.sessions.putFromPeer(record))
        }) else {
            router.counters.storeErrors &+= 1
            return
        }
        switch result {
        case .stored: break
        case .stale: return
        case .notOwned:
            router.counters.sessionsNotOwned &+= 1
            return
        case .refused:
            router.counters.sessionsRefused &+= 1
            router.warnPeerFault("refused a session row: the peer's session rows are at their limit", peer: peer)
            return
        }
        router.emit(.session(record, change: SessionDirectoryRow(existing: existing).change(to: record)), feature: record.featureID)
    }
}
