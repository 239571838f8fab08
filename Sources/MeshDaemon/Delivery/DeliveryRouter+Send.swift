import Foundation
import Logging
import MeshCrypto
import MeshCore
import NIOCore
import SessionMesh

/// The send operation: realtime (datagram + ack, falling back to the outbox) and reliable.
extension DeliveryRouter {
    /// Sends an envelope (`encoded` with `SessionWireCodec`) to `target` (nil/empty = every paired
    /// device). `mode` is the local API mode byte: 1 realtime, 2 reliable, 5 acknowledgement.
    ///
    /// Reliable returns once the item is durably in the outbox of every target, or throws
    /// `queue-full` (nothing queued for any target is lost).
    public func send(_ envelope: AnySessionSyncEnvelope, encoded: [UInt8], mode: UInt8,
                     to target: String?) async throws -> DeliverySendOutcome {
        try await send(metadata: envelope.metadata, encoded: encoded, mode: mode, to: target)
    }

    /// `send(_:encoded:mode:to:)` with only the envelope's metadata (all the router reads of it
    /// besides the encoded bytes), as the local API has it.
    public func send(metadata: SessionSyncMetadata, encoded: [UInt8], mode: UInt8,
                     to target: String?) async throws -> DeliverySendOutcome {
        let peers = try await targets(target)
        let item = DeliveryItem(eventID: metadata.eventID, kind: mode, featureID: metadata.featureID,
                                sessionID: metadata.sessionID, payload: encoded)
        if mode == DeliveryItem.Kind.reliableEnvelope.rawValue {
            try await enqueueReliable(item, for: peers)
            // No paired device: nothing was queued (docs/LOCAL-API.md: `sent`, 0 peers).
            return DeliverySendOutcome(outcome: peers.isEmpty ? "sent" : "queued", peers: peers.count)
        }
        return sendRealtime(item, to: peers)
    }

    /// The peers `target` names when that is known without asking the node: a full device ID,
    /// or every paired device (nil/empty/"all"). Nil for anything else (a short ID, a name),
    /// which `targets(_:)` resolves asynchronously.
    func knownTargets(_ target: String?) -> [DeviceID]? {
        // A full device ID (never blank, never "all"): no trimming needed.
        if let target, let exact = peersByKey[target] { return [exact] }
        guard Self.meansEveryPeer(target) else { return nil }
        return peerStates.count == 1 ? Array(peerStates.keys) : peerStates.keys.sorted()
    }

    /// A non-reliable send done at once, without suspending, when the target is known without
    /// asking the node (nil/empty/"all", or a full device ID): the local API's fast path, run
    /// on the router's loop. Nil: take the asynchronous `send` (same outcome, just slower).
    ///
    /// `atOnce`: a datagram that nothing queued in this loop turn waits before leaves now,
    /// instead of at the end of the turn (the caller knows no other send follows at once).
    func sendImmediately(_ metadata: SessionSyncMetadata, encoded: [UInt8], mode: UInt8,
                         to target: String?, atOnce: Bool = false) -> DeliverySendOutcome? {
        guard mode != DeliveryItem.Kind.reliableEnvelope.rawValue, let peers = knownTargets(target) else { return nil }
        let item = DeliveryItem(eventID: metadata.eventID, kind: mode, featureID: metadata.featureID,
                                sessionID: metadata.sessionID, payload: encoded)
        return sendRealtime(item, to: peers, atOnce: atOnce)
    }

    /// A reliable send started at once, without a task, when the target is known without asking
    /// the node (as `sendImmediately`): `reply` runs on the router's loop once the item is
    /// durable for every target (`queued`), or with the error `send` would throw. False: take
    /// the asynchronous `send` (same outcome), also when no device is paired. `reply` never runs
    /// before this returns. Must be called on the router's loop.
    func enqueueReliableNow(_ metadata: SessionSyncMetadata, encoded: [UInt8], to target: String?,
                            reply: @escaping (Result<DeliverySendOutcome, MeshError>) -> Void) -> Bool {
        // No paired device: the asynchronous `send` answers (a reply from inside this call would
        // start the connection's next queued request from inside this one, and so on).
        guard let peers = knownTargets(target), !peers.isEmpty else { return false }
        let item = DeliveryItem(eventID: metadata.eventID, kind: DeliveryItem.Kind.reliableEnvelope.rawValue,
                                featureID: metadata.featureID, sessionID: metadata.sessionID, payload: encoded)
        commitReliable(item, for: peers, reply: reply)
        return true
    }

    /// Durably queues `item` for every peer (concurrent callers share commits) and starts
    /// sending; throws `queue-full` or a store error (nothing queued for any target is lost).
    func enqueueReliable(_ item: DeliveryItem, for peers: [DeviceID]) async throws {
        guard !peers.isEmpty else { return }
        let result: Result<DeliverySendOutcome, MeshError> = await withCheckedContinuation { continuation in
            commitReliable(item, for: peers) { continuation.resume(returning: $0) }
        }
        _ = try result.get()
    }

    /// The one path of reliable sends: the item goes to the group committer for every target
    /// (no task: writes submitted in call order are committed in that order, so one caller's
    /// sends keep their per-peer order), and `reply` runs on the router's loop once all are done.
    private func commitReliable(_ item: DeliveryItem, for peers: [DeviceID],
                                reply: @escaping (Result<DeliverySendOutcome, MeshError>) -> Void) {
        let outbox = item.outboxItem(createdAt: wallNow())
        let loop = self.loop
        let waiting = NIOLoopBound(ReliableSendWait(peers: peers, reply: reply), eventLoop: loop)
        for (index, peer) in peers.enumerated() {
            committer.enqueue(peer: key(peer), item: outbox, on: loop) { [self] result in
                self.onLoop { router in
                    let waiting = waiting.value
                    if waiting.record(result, at: index) { router.finishReliable(waiting) }
                }
            }
        }
    }

    /// All targets of a reliable send are committed: pumps, counters, and the reply.
    private func finishReliable(_ waiting: ReliableSendWait) {
        waiting.forEachCommitted { peer, receipt in queued(receipt, for: peer) }
        guard let failure = waiting.failure else {
            counters.reliableEnqueued &+= UInt64(waiting.peers.count)
            waiting.reply(.success(DeliverySendOutcome(outcome: "queued", peers: waiting.peers.count)))
            return
        }
        waiting.reply(.failure(enqueueFailure(failure)))
    }

    /// The error a reliable send reports when its item could not be queued, counted
    /// (`ReliableSendWait.failure(for:)`).
    func enqueueFailure(_ error: any Error) -> MeshError {
        let (failure, refused) = ReliableSendWait.failure(for: error)
        if refused { counters.reliableRefused &+= 1 } else { counters.storeErrors &+= 1 }
        return failure
    }

    /// A realtime item to each of `peers`: `queued` when any copy went to the outbox, else
    /// `pending` when any waits for a first activation, else `sent`.
    func sendRealtime(_ item: DeliveryItem, to peers: [DeviceID], atOnce: Bool = false) -> DeliverySendOutcome {
        var outcome = "sent"
        for peer in peers {
            switch sendRealtime(item, to: peer, atOnce: atOnce) {
            case "queued": outcome = "queued"
            case "pending" where outcome == "sent": outcome = "pending"
            default: break
            }
        }
        return DeliverySendOutcome(outcome: outcome, peers: peers.count)
    }

    /// One realtime item to one peer (`RealtimeSender.send`); returns the outcome word.
    func sendRealtime(_ item: DeliveryItem, to peer: DeviceID, atOnce: Bool = false) -> String {
        // In place through `peerStates.values`: `peerStates[peer]?.…` moved the state out of the
        // dictionary and back through a coroutine frame (≈ 2 000 instructions per message).
        guard let slot = peerStates.index(forKey: peer) else { return "queued" }
        switch realtime.send(item, to: peer, state: &peerStates.values[slot], now: now(), atOnce: atOnce) {
        case .pending(let droppedOldest):
            if droppedOldest { counters.pendingDropped &+= 1 }
            return "pending"
        case .fallBack:
            fallBack(item, to: peer)
            return "queued"
        case .sent(let wakeAt, let datagram, let scheduleFlush):
            if let wakeAt { armAckWatchdog(at: wakeAt) }
            counters.realtimeSent &+= 1
            // A datagram that fails to go out falls its items back to the outbox.
            if let datagram { sendRealtimeDatagram(datagram, items: 1, to: peer, or: CollectionOfOne(item.eventID)) }
            if scheduleFlush { scheduleRealtimeFlush() }
            return "sent"
        }
    }

    /// A drained pre-activation item: realtime message on the ordered stream, ack still expected.
    func sendRealtimeOnStream(_ item: DeliveryItem, to peer: DeviceID) async {
        expectAck(item, from: peer)
        if await transmit(.realtime(item), to: peer, path: .stream) {
            counters.realtimeSent &+= 1
        } else if realtime.stopWaiting(item.eventID, for: peer) != nil {
            fallBack(item, to: peer)
        }
    }

    /// Puts a realtime item into the durable outbox (same event ID, so the receiver dedups).
    func fallBack(_ item: DeliveryItem, to peer: DeviceID) {
        counters.realtimeFallbacks &+= 1
        committer.enqueue(peer: key(peer), item: item.outboxItem(createdAt: wallNow()), on: loop) { [self] result in
            self.onLoop { router in
                switch result {
                case .success(let receipt): router.queued(receipt, for: peer)
                case .failure(let error): router.noteStoreError(error, "could not queue a realtime item that got no ack")
                }
            }
        }
    }

    /// An outbox row was committed for `peer`: its pump starts. When the peer was unpaired
    /// while the commit ran, `unpaired` may have dropped the peer's outbox before the row
    /// landed, and the row would wait forever for a device that is gone (listed by `meshctl
    /// queue`, counted against the limits): it is deleted instead.
    func queued(_ receipt: OutboxReceipt, for peer: DeviceID) {
        guard peerStates[peer] == nil else {
            schedulePump(peer)
            return
        }
        spawn { router in
            do {
                try await router.outboxRows.drop(receipt.id)
            } catch {
                router.noteStoreError(error, "could not delete an item queued for an unpaired device")
            }
        }
    }

    func noteStoreError(_ error: any Error, _ message: Logger.Message) {
        counters.storeErrors &+= 1
        // A full disk fails every write: one line per 10 s, with how many were held back.
        guard let suppressed = storeErrorWarning.admit(now: now()) else { return }
        logger.error(message, metadata: ["error": "\(error)", "suppressed": "\(suppressed)"])
    }

    // MARK: - Acks of realtime items

    /// Registers the ack deadline of `item` sent to `peer` now (`RealtimeSender.expectAck`).
    func expectAck(_ item: DeliveryItem, from peer: DeviceID) {
        if let wakeAt = realtime.expectAck(item, from: peer, peers: peerStates, sentAt: now()) { armAckWatchdog(at: wakeAt) }
    }

    /// `peer` acked `eventID` (`RealtimeSender.acked`: the copy stops waiting, the peer's floor
    /// shrinks). Another peer's copy of the same event keeps waiting.
    func realtimeAcked(_ eventID: UUID, from peer: DeviceID, at now: UInt64) {
        if realtime.acked(eventID, from: peer, at: now, peers: &peerStates) { counters.realtimeAcked &+= 1 }
    }

    /// Wakes `watchAcks` at the monotonic instant `deadline` (replacing an armed later wake-up):
    /// a task scheduled on the router's own loop (no timer thread, no cross-thread wake-up).
    func armAckWatchdog(at deadline: UInt64) {
        ackWatchdog?.cancel()
        let now = now()
        let delay = TimeAmount.nanoseconds(Int64(clamping: deadline > now ? deadline - now : 0))
        let router = self
        ackWatchdog = loop.scheduleTask(in: delay) { router.onLoop { $0.watchAcks() } }
    }

    /// Falls back the copies whose ack is late, each to its own peer's outbox, and re-arms for
    /// the earliest deadline left (`RealtimeSender.expire`: the late copies' peers' floors grow).
    func watchAcks() {
        ackWatchdog = nil
        let (expired, wakeAt) = realtime.expire(now: now(), peers: &peerStates)
        for waiting in expired { fallBack(waiting.item, to: waiting.peer) }
        if let wakeAt { armAckWatchdog(at: wakeAt) }
    }
}
