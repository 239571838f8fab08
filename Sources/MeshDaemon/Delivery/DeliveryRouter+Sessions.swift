import Foundation
import MeshCrypto
import MeshCore
import SessionMesh

/// The session directory, closing, timer anchors and watermarks.
extension DeliveryRouter {
    /// Announces or updates a session of this device and replicates it to active peers (and to
    /// the others on their next activation). Throws `session-closed` for a closed session.
    public func announceSession(sessionID: UUID, featureID: String, owner: String, status: String) async throws {
        guard status != "closed" else {
            throw MeshError.invalidArgument("session.announce: use session.close to close a session")
        }
        let store = self.store
        let existing: SessionRecord?
        do { existing = try await worker.run { try store.sessions.record(id: sessionID) } } catch { throw MeshError.store(error) }
        if existing?.status == "closed" { throw MeshError.sessionClosed(sessionID.uuidString) }
        let record = SessionRecord(sessionID: sessionID, featureID: featureID, owner: owner, status: status,
                                   updatedAt: wallNow(), revision: (existing?.revision ?? 0) + 1, sourcePeer: nil)
        do { _ = try await worker.run { try store.sessions.put(record) } } catch { throw MeshError.store(error) }
        emit(.session(record, change: existing == nil ? .announced : .updated), feature: featureID)
        for (peer, state) in peerStates where state.active {
            await transmit(.session(DeliverySessionRecord(record)), to: peer, path: .stream)
        }
    }

    /// Closes a session: directory row `closed`, a closing envelope queued reliably for every
    /// paired device, a closing snapshot in the outbound slot. Returns once the envelope was
    /// acknowledged by the reachable peers (within `closeWait`) — `delivered` — or is durably
    /// queued for the others — `queued`.
    public func closeSession(sessionID: UUID, featureID: String) async throws -> (delivered: [String], queued: [String]) {
        let store = self.store, at = wallNow()
        let existing: SessionRecord?
        let slot: SnapshotSlot?
        do {
            (existing, slot) = try await worker.run {
                (try store.sessions.record(id: sessionID), try store.slots.outbound(featureID: featureID, sessionID: sessionID))
            }
        } catch {
            throw MeshError.store(error)
        }
        let record = SessionRecord(sessionID: sessionID, featureID: featureID, owner: existing?.owner ?? localDeviceID.description,
                                   status: "closed", updatedAt: at, revision: (existing?.revision ?? 0) + 1, sourcePeer: nil)
        let metadata = SessionSyncMetadata(sessionID: sessionID, featureID: featureID, sourcePeerID: localDeviceID.description,
                                           eventID: UUID(), sequence: 0, causalTimestamp: at,
                                           payloadType: Self.sessionClosedPayloadType)
        let envelope = AnySessionSyncEnvelope(metadata: metadata, payload: Data())
        let snapshot = AnySessionSyncSnapshot(metadata: metadata, revision: (slot?.revision ?? 0) + 1, state: Data())
        let encodedEnvelope: [UInt8], encodedSnapshot: [UInt8]
        do {
            encodedEnvelope = try SessionWireCodec.encode(envelope)
            encodedSnapshot = try SessionWireCodec.encode(snapshot)
        } catch {
            throw MeshError.invalidArgument("session.close: \(error)")
        }
        do { _ = try await worker.run { try store.sessions.put(record) } } catch { throw MeshError.store(error) }
        emit(.session(record, change: .closed), feature: featureID)
        let peers = peerStates.keys.sorted()
        let item = DeliveryItem(eventID: metadata.eventID, kind: DeliveryItem.Kind.reliableEnvelope.rawValue,
                                featureID: featureID, sessionID: sessionID, payload: encodedEnvelope)
        try await enqueueReliable(item, for: peers)
        _ = try await publishSnapshot(snapshot, encoded: encodedSnapshot, to: nil)
        var delivered: [String] = [], queued: [String] = []
        for peer in peers {
            if peerStates[peer]?.active == true {
                await transmit(.session(DeliverySessionRecord(record)), to: peer, path: .stream)
            }
        }
        for peer in peers {
            if peerStates[peer]?.active == true, await waitUntilDelivered(item.eventID, to: peer) {
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
        guard !inbound.stopping else { return false }
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
        do { return try await worker.run { try store.sessions.list(featureID: featureID) } } catch { throw MeshError.store(error) }
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
        let change: SessionChange = record.status == "closed" ? .closed : existing == nil ? .announced : .updated
        emit(.session(record, change: change), feature: record.featureID)
    }

    // MARK: - Timer anchors

    /// Stores a session's anchor (latest revision wins; instants in this device's clock) and
    /// forwards it. Returns whether it replaced the stored one.
    public func setAnchor(sessionID: UUID, featureID: String, revision: UInt64, anchor: SessionTimerAnchor) async throws -> Bool {
        let record = DeliveryAnchorRecord(sessionID: sessionID, featureID: featureID, revision: revision, anchor: anchor)
        let store = self.store, at = wallNow(), bytes = record.encoded()
        let stored: Bool
        do {
            stored = try await worker.run { try store.sessions.putTimerAnchor(sessionID: sessionID, revision: revision, bytes: bytes, at: at) }
        } catch {
            throw MeshError.store(error)
        }
        if stored {
            for (peer, state) in peerStates where state.active { await transmit(.anchor(record), to: peer, path: .stream) }
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
        guard record.anchor.accumulatedElapsedBeforeAnchor.isFinite, record.anchor.accumulatedElapsedBeforeAnchor >= 0 else {
            counters.anchorsRefused &+= 1
            warnPeerFault("refused a timer anchor with a negative accumulated time", peer: peer)
            return
        }
        await refreshEstimate(peer)
        let offset = Double(peerStates[peer]?.offsetNanoseconds ?? 0) / 1e9
        var local = record
        local.anchor = record.anchor.shifted(by: -offset)
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
        guard let state = peerStates[target] else { return }
        if let known = state.watermarksSent[sessionID], known.sequence >= sequence { return }
        peerStates[target]?.watermarksSent[sessionID] = (featureID, sequence)
        persistWatermark(peer: target, sessionID: sessionID, direction: .sent, featureID: featureID, sequence: sequence)
        if state.active {
            await transmit(.watermark(sessionID: sessionID, featureID: featureID, sequence: sequence), to: target, path: .stream)
        }
    }

    func watermarkReceived(sessionID: UUID, featureID: String, sequence: UInt64, from peer: DeviceID) {
        guard let state = peerStates[peer] else { return }
        if let known = state.watermarksReceived[sessionID], known.sequence >= sequence { return }
        guard state.watermarksReceived[sessionID] != nil
                || state.watermarksReceived.count < options.maximumWatermarkSessionsPerPeer else {
            counters.watermarksRefused &+= 1
            warnPeerFault("refused a watermark: the peer has the maximum of sessions with one", peer: peer)
            return
        }
        peerStates[peer]?.watermarksReceived[sessionID] = (featureID, sequence)
        persistWatermark(peer: peer, sessionID: sessionID, direction: .received, featureID: featureID, sequence: sequence)
        emit(.watermark(peer: key(peer), sessionID: sessionID, featureID: featureID, sequence: sequence), feature: featureID)
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
            guard let peer = peersByKey[record.peer] else { continue }
            let mark = (featureID: record.featureID, sequence: record.sequence)
            switch record.direction {
            case .sent:
                if (peerStates[peer]?.watermarksSent[record.sessionID]?.sequence ?? 0) < record.sequence {
                    peerStates[peer]?.watermarksSent[record.sessionID] = mark
                }
            case .received:
                if (peerStates[peer]?.watermarksReceived[record.sessionID]?.sequence ?? 0) < record.sequence {
                    peerStates[peer]?.watermarksReceived[record.sessionID] = mark
                }
            }
        }
    }

    /// The watermarks peers reported for `features`, as events for a newly attached app.
    func currentWatermarks(features: Set<String>, sessionID: UUID?) -> [DeliveryEvent] {
        var events: [DeliveryEvent] = []
        for (peer, state) in peerStates.sorted(by: { $0.key < $1.key }) {
            for (session, mark) in state.watermarksReceived.sorted(by: { $0.key.uuidString < $1.key.uuidString })
            where features.contains(mark.featureID) && (sessionID == nil || sessionID == session) {
                events.append(.watermark(peer: key(peer), sessionID: session, featureID: mark.featureID, sequence: mark.sequence))
            }
        }
        return events
    }
}
