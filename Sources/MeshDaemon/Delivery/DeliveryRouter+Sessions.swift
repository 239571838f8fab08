import Foundation
import MeshCrypto
import MeshCore
import SessionMesh

/// The session directory, closing, timer anchors and watermarks.
extension DeliveryRouter {
    /// Announces or updates a session of this device and replicates it to active peers (and to
    /// the others on their next activation). Throws `session-closed` for a closed session.
    public func announceSession(sessionID: UUID, featureID: String, owner: String, status: String) async throws {
        try SessionDirectoryRow.checkAnnounced(status: status)
        let store = self.store
        let existing = try await worker.call { try store.sessions.record(id: sessionID) }
        let (record, change) = try SessionDirectoryRow(existing: existing)
            .announce(sessionID: sessionID, featureID: featureID, owner: owner, status: status, at: wallNow())
        _ = try await worker.call { try store.sessions.put(record) }
        emit(.session(record, change: change), feature: featureID)
        for peer in peerStates.keys.sorted() where peerStates[peer]?.active == true {
            await transmit(.session(DeliverySessionRecord(record)), to: peer, path: .stream)
        }
    }

    /// Closes a session: directory row `closed`, a closing envelope queued reliably for every
    /// paired device, a closing snapshot in the outbound slot (`SessionClosing`). Returns once
    /// the envelope was acknowledged by the reachable peers (within `closeWait`) — `delivered`
    /// — or is durably queued for the others — `queued`.
    public func closeSession(sessionID: UUID, featureID: String) async throws -> (delivered: [String], queued: [String]) {
        let store = self.store, at = wallNow()
        let (existing, slot) = try await worker.call {
            (try store.sessions.record(id: sessionID), try store.slots.outbound(featureID: featureID, sessionID: sessionID))
        }
        let closing = try SessionClosing(sessionID: sessionID, featureID: featureID, existing: existing,
                                         slotRevision: slot?.revision, localDevice: localDeviceID.description,
                                         at: at, eventID: random.uuid())
        let record = closing.record
        _ = try await worker.call { try store.sessions.put(record) }
        emit(.session(record, change: .closed), feature: featureID)
        let peers = peerStates.keys.sorted()
        try await sender.enqueueReliable(self, closing.item, for: peers)
        _ = try await publishSnapshot(closing.snapshot, encoded: closing.encodedSnapshot, to: nil)
        var delivered: [String] = [], queued: [String] = []
        for peer in peers where peerStates[peer]?.active == true {
            await transmit(.session(DeliverySessionRecord(record)), to: peer, path: .stream)
        }
        for peer in peers {
            if peerStates[peer]?.active == true, await waitUntilDelivered(closing.item.eventID, to: peer) {
                delivered.append(peer.description)
            } else {
                queued.append(peer.description)
            }
        }
        return (delivered, queued)
    }

    /// Waits (bounded by `closeWait`, on the loop's clock) until the outbox no longer holds
    /// `eventID` for `peer`: checked now and after each delete of the peer's acknowledged items.
    func waitUntilDelivered(_ eventID: UUID, to peer: DeviceID) async -> Bool {
        guard !consumer.inbound.stopping else { return false }
        return await withCheckedContinuation { continuation in
            // Registered before the first check: a delete committed during it checks again.
            let id = deliveryWaits.add(eventID, peer: peer, continuation: continuation)
            let router = self
            let deadline = loop.scheduleTask(in: .nanoseconds(Int64(options.closeWait * 1e9))) {
                router.onLoop { $0.deliveryWaits.finish(id, delivered: false) }
            }
            deliveryWaits.setDeadline(deadline, of: id)
            spawn { await $0.checkDeliveryWaits(on: peer) }
        }
    }

    /// Ends the waits on `peer` whose item has left its outbox.
    func checkDeliveryWaits(on peer: DeviceID) async {
        let waiting = deliveryWaits.waiting(on: peer)
        guard !waiting.isEmpty else { return }
        let store = self.store, key = key(peer)
        guard let queued = try? await worker.run({ Set(try store.outbox.list(peer: key).map(\.eventID)) }) else { return }
        for (id, eventID) in waiting where !queued.contains(eventID) { deliveryWaits.finish(id, delivered: true) }
    }

    /// The router stops: every delivery wait ends (not delivered).
    func resumeDeliveryWaits() {
        deliveryWaits.finishAll()
    }

    /// The directory, optionally of one feature, most recently updated first.
    public func sessions(featureID: String?) async throws -> [SessionRecord] {
        let store = self.store
        return try await worker.call { try store.sessions.list(featureID: featureID) }
    }

    func sessionReceived(_ message: DeliverySessionRecord, from peer: DeviceID) async {
        counters.sessionsReceived &+= 1
        let record = message.record(sourcePeer: peer.description), store = self.store
        guard let (existing, changed) = try? await worker.run({
            let existing = try store.sessions.record(id: record.sessionID)
            return (existing, try store.sessions.put(record))
        }) else {
            counters.storeErrors &+= 1
            return
        }
        guard changed else { return }
        emit(.session(record, change: SessionDirectoryRow(existing: existing).change(to: record)), feature: record.featureID)
    }

    // MARK: - Timer anchors

    /// Stores a session's anchor (latest revision wins; instants in this device's clock) and
    /// forwards it. Returns whether it replaced the stored one.
    public func setAnchor(sessionID: UUID, featureID: String, revision: UInt64, anchor: SessionTimerAnchor) async throws -> Bool {
        let record = DeliveryAnchorRecord(sessionID: sessionID, featureID: featureID, revision: revision, anchor: anchor)
        let store = self.store, at = wallNow(), bytes = record.encoded()
        let stored = try await worker.call {
            try store.sessions.putTimerAnchor(sessionID: sessionID, revision: revision, bytes: bytes, at: at)
        }
        if stored {
            for peer in peerStates.keys.sorted() where peerStates[peer]?.active == true {
                await transmit(.anchor(record), to: peer, path: .stream)
            }
        }
        return stored
    }

    /// A peer's anchor: rewritten into this clock with the estimated offset (peer minus local),
    /// stored if newer, handed to the apps of the feature.
    ///
    /// An anchor with a negative or non-finite accumulated time is refused (counted): an app
    /// must never compute a negative elapsed time from it. The offset is the estimator's, which
    /// believes at most an hour either way.
    func anchorReceived(_ record: DeliveryAnchorRecord, from peer: DeviceID) async {
        counters.anchorsReceived &+= 1
        guard record.isUsable else {
            counters.anchorsRefused &+= 1
            warnPeerFault("refused a timer anchor with a negative accumulated time", peer: peer)
            return
        }
        refreshEstimate(peer)
        let local = record.inLocalClock(offsetNanoseconds: peerStates[peer]?.offsetNanoseconds)
        let store = self.store, at = wallNow(), bytes = local.encoded(), sessionID = local.sessionID, revision = local.revision
        guard let stored = try? await worker.run({
            try store.sessions.putTimerAnchor(sessionID: sessionID, revision: revision, bytes: bytes, at: at)
        }) else {
            counters.storeErrors &+= 1
            return
        }
        guard stored else { return }
        emit(.anchor(from: peer.description, sessionID: local.sessionID, featureID: local.featureID,
                     revision: local.revision, anchor: local.anchor), feature: local.featureID)
    }

    // MARK: - Watermarks

    /// This device's app processed `peer`'s events of the session up to `sequence`: stores and
    /// forwards it (monotonic: a lower value is ignored; resent on every activation, kept
    /// across restarts). Throws `invalid-argument` for a sequence the store cannot hold.
    public func setWatermark(sessionID: UUID, featureID: String, peer: String, sequence: UInt64) async throws {
        guard sequence <= UInt64(Int64.max) else {
            throw MeshError.invalidArgument("watermark.set: sequence must be at most \(Int64.max)")
        }
        let target = try resolvePairedPeer(peer)
        ensurePeer(target)
        guard peerStates[target]?.watermarks.set(sessionID: sessionID, featureID: featureID, sequence: sequence) == true
        else { return }
        persistWatermark(peer: target, sessionID: sessionID, direction: .sent, featureID: featureID, sequence: sequence)
        if peerStates[target]?.active == true {
            await transmit(.watermark(sessionID: sessionID, featureID: featureID, sequence: sequence), to: target, path: .stream)
        }
    }

    func watermarkReceived(sessionID: UUID, featureID: String, sequence: UInt64, from peer: DeviceID) {
        let maximum = options.maximumWatermarkSessionsPerPeer
        switch peerStates[peer]?.watermarks.received(sessionID: sessionID, featureID: featureID, sequence: sequence,
                                                     maximumSessions: maximum) {
        case nil, .stale?: return
        case .refused?:
            counters.watermarksRefused &+= 1
            warnPeerFault("refused a watermark: the peer has the maximum of sessions with one", peer: peer)
        case .raised?:
            persistWatermark(peer: peer, sessionID: sessionID, direction: .received, featureID: featureID, sequence: sequence)
            emit(.watermark(peer: key(peer), sessionID: sessionID, featureID: featureID, sequence: sequence), feature: featureID)
        }
    }

    /// Writes a raised watermark to the store, off the caller's path (the store keeps the
    /// highest value, so the order of these writes does not matter).
    func persistWatermark(peer: DeviceID, sessionID: UUID, direction: WatermarkRecord.Direction, featureID: String, sequence: UInt64) {
        guard sequence <= UInt64(Int64.max) else { return }
        let record = WatermarkRecord(peer: key(peer), sessionID: sessionID, direction: direction, featureID: featureID,
                                     sequence: sequence, updatedAt: wallNow())
        let store = self.store
        spawn { router in
            do {
                _ = try await router.worker.run { try store.peers.putWatermark(record) }
            } catch {
                router.noteStoreError(error, "could not store a delivery watermark")
            }
        }
    }

    /// Waits until the paired peers are registered and their stored watermarks loaded (once per
    /// router; `run()` and `attach` both call it, whichever comes first starts it).
    func pairedPeersReady() async {
        if let load = watermarkLoad {
            await load.value
            return
        }
        let load = Task(executorPreference: taskExecutor) { await self.loadPairedPeers() }
        watermarkLoad = load
        await load.value
    }

    /// Registers every paired peer and merges its stored watermarks into its state (only ever
    /// raising them).
    private func loadPairedPeers() async {
        for device in channels.pairedDevices() { ensurePeer(device.deviceID) }
        let store = self.store
        let records: [WatermarkRecord]
        do {
            records = try await worker.run { try store.peers.watermarks() }
        } catch {
            noteStoreError(error, "could not read the stored delivery watermarks")
            return
        }
        for record in records {
            if let peer = peersByKey[record.peer] { peerStates[peer]?.watermarks.merge(record) }
        }
    }

    /// The watermarks peers reported for `features`, as events for a newly attached app.
    func currentWatermarks(features: Set<String>, sessionID: UUID?) -> [DeliveryEvent] {
        peerStates.sorted { $0.key < $1.key }.flatMap { peer, state in
            state.watermarks.current(features: features, sessionID: sessionID).map {
                DeliveryEvent.watermark(peer: key(peer), sessionID: $0.sessionID, featureID: $0.mark.featureID,
                                        sequence: $0.mark.sequence)
            }
        }
    }
}
