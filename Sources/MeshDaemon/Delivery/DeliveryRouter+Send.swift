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
    /// the node (as `sendImmediately`): the item goes to the group committer for every target,
    /// and `reply` runs on the router's loop once all are durable (outcome `queued`), or with
    /// the error `send` would throw. False: take the asynchronous `send` (same outcome), also
    /// when no device is paired. `reply` never runs before this returns.
    ///
    /// Must be called on the router's loop. Writes submitted in call order are committed in that
    /// order, so one connection's sends keep their per-peer order.
    func enqueueReliableNow(_ metadata: SessionSyncMetadata, encoded: [UInt8], to target: String?,
                            reply: @escaping (Result<DeliverySendOutcome, MeshError>) -> Void) -> Bool {
        // No paired device: the asynchronous `send` answers (a reply from inside this call would
        // start the connection's next queued request from inside this one, and so on).
        guard let peers = knownTargets(target), !peers.isEmpty else { return false }
        let item = DeliveryItem(eventID: metadata.eventID, kind: DeliveryItem.Kind.reliableEnvelope.rawValue,
                                featureID: metadata.featureID, sessionID: metadata.sessionID, payload: encoded)
        let outbox = item.outboxItem(createdAt: wallNow())
        let loop = self.loop
        let waiting = NIOLoopBound(ReliableSendWait(peers: peers, reply: reply), eventLoop: loop)
        for (index, peer) in peers.enumerated() {
            committer.enqueue(peer: key(peer), item: outbox, on: loop) { [self] result in
                self.onLoop { router in
                    let waiting = waiting.value
                    guard let receipts = waiting.record(result, at: index) else { return }
                    router.finishReliableNow(receipts, waiting)
                }
            }
        }
        return true
    }

    /// All targets of a no-task reliable send are done: counters, pumps, and the reply.
    private func finishReliableNow(_ results: [Result<OutboxReceipt, StoreError>], _ waiting: ReliableSendWait) {
        var failure: StoreError?
        for (peer, result) in zip(waiting.peers, results) {
            switch result {
            case .success(let receipt):
                // Queued for a peer unpaired meanwhile: removed again (as `keepQueued`).
                if peerStates[peer] != nil {
                    schedulePump(peer)
                } else {
                    Task { _ = await self.keepQueued(receipt, for: peer) }
                }
            case .failure(let error):
                failure = failure ?? error
            }
        }
        guard let failure else {
            counters.reliableEnqueued &+= UInt64(waiting.peers.count)
            waiting.reply(.success(DeliverySendOutcome(outcome: "queued", peers: waiting.peers.count)))
            return
        }
        waiting.reply(.failure(enqueueFailure(failure)))
    }

    /// The error a reliable send reports when its item could not be queued, counted: a full
    /// queue or disk is `queue-full` (refused), anything else a store failure.
    func enqueueFailure(_ error: any Error) -> MeshError {
        if let full = error as? StoreError, full.code == .full {
            counters.reliableRefused &+= 1
            return MeshError.queueFull(full.description)
        }
        counters.storeErrors &+= 1
        return MeshError.store(error)
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

    /// Durably queues `item` for every peer (concurrent callers share commits), then starts sending.
    func enqueueReliable(_ item: DeliveryItem, for peers: [DeviceID]) async throws {
        let outbox = item.outboxItem(createdAt: wallNow())
        let committer = self.committer
        var receipts: [(peer: DeviceID, receipt: OutboxReceipt)] = []
        do {
            if peers.count == 1, let peer = peers.first {
                receipts = [(peer, try await committer.enqueue(peer: key(peer), item: outbox))]
            } else {
                receipts = try await withThrowingTaskGroup(of: (DeviceID, OutboxReceipt).self) { group in
                    for peer in peers {
                        let key = key(peer)
                        group.addTask { (peer, try await committer.enqueue(peer: key, item: outbox)) }
                    }
                    var receipts: [(peer: DeviceID, receipt: OutboxReceipt)] = []
                    while let receipt = try await group.next() { receipts.append(receipt) }
                    return receipts
                }
            }
        } catch {
            throw enqueueFailure(error)
        }
        counters.reliableEnqueued &+= UInt64(peers.count)
        for (peer, receipt) in receipts {
            if await keepQueued(receipt, for: peer) { schedulePump(peer) }
        }
    }

    /// One realtime item to one peer; returns the outcome word. Its datagram leaves at the end
    /// of the loop turn, packed with the turn's other items for the peer; with `atOnce`, and
    /// none of those queued before it, at once.
    func sendRealtime(_ item: DeliveryItem, to peer: DeviceID, atOnce: Bool = false) -> String {
        // In place through `peerStates.values`: `peerStates[peer]?.…` moved the state out of the
        // dictionary and back through a coroutine frame (≈ 2 000 instructions per message).
        guard let slot = peerStates.index(forKey: peer) else { return "queued" }
        let at = now()
        let route = peerStates.values[slot].routeRealtime(item, now: at)
        let floor: Double, rtt: Int64?
        switch route {
        case .pending(let droppedOldest):
            if droppedOldest { counters.pendingDropped &+= 1 }
            return "pending"
        case .fallBack:
            fallBack(item, to: peer)
            return "queued"
        case .datagram(let ackWaitFloor, let roundTripNanoseconds):
            (floor, rtt) = (ackWaitFloor, roundTripNanoseconds)
        }
        let message = DeliveryMessage.realtime(item).encode()
        guard message.count <= MeshNode.maximumDatagramMessage else {
            fallBack(item, to: peer)
            return "queued"
        }
        expectAck(item, from: peer, floor: floor, roundTripNanoseconds: rtt, sentAt: at)
        counters.realtimeSent &+= 1
        if atOnce, realtimeBacklog.isEmpty || realtimeBacklog[peer] == nil {
            sendRealtimeDatagram(message, items: 1, to: peer, or: CollectionOfOne(item.eventID))
        } else {
            // Packed with the other realtime items of this loop turn and sent at its end (a
            // datagram that then fails to go out falls its items back to the outbox).
            queueRealtimeNow(item.eventID, message: message, to: peer)
        }
        return "sent"
    }

    /// A drained pre-activation item: realtime message on the ordered stream, ack still expected.
    func sendRealtimeOnStream(_ item: DeliveryItem, to peer: DeviceID) async {
        expectAck(item, from: peer)
        if await transmit(.realtime(item), to: peer, path: .stream) {
            counters.realtimeSent &+= 1
        } else if awaitingAck.remove(item.eventID, for: peer) != nil {
            fallBack(item, to: peer)
        }
    }

    /// Puts a realtime item into the durable outbox (same event ID, so the receiver dedups).
    func fallBack(_ item: DeliveryItem, to peer: DeviceID) {
        counters.realtimeFallbacks &+= 1
        let committer = self.committer, key = key(peer), outbox = item.outboxItem(createdAt: wallNow())
        Task {
            do {
                let receipt = try await committer.enqueue(peer: key, item: outbox)
                if await self.keepQueued(receipt, for: peer) { self.schedulePump(peer) }
            } catch {
                self.noteStoreError(error, "could not queue a realtime item that got no ack")
            }
        }
    }

    /// Whether an outbox row just committed for `peer` may stay. Not when the peer was unpaired
    /// while the commit ran: `unpaired` may have dropped the peer's outbox before the row landed,
    /// which would then wait forever for a device that is gone (listed by `meshctl queue`,
    /// counted against the limits). Such a row is deleted here.
    func keepQueued(_ receipt: OutboxReceipt, for peer: DeviceID) async -> Bool {
        guard peerStates[peer] == nil else { return true }
        let store = self.store
        do {
            _ = try await worker.run { try store.cancelOutbox(id: receipt.id) }
        } catch {
            noteStoreError(error, "could not delete an item queued for an unpaired device")
        }
        return false
    }

    func noteStoreError(_ error: any Error, _ message: Logger.Message) {
        counters.storeErrors &+= 1
        // A full disk fails every write: one line per 10 s, with how many were held back.
        guard let suppressed = storeErrorWarning.admit(now: now()) else { return }
        logger.error(message, metadata: ["error": "\(error)", "suppressed": "\(suppressed)"])
    }

    // MARK: - Acks of realtime items

    /// Registers the ack deadline: max(4 × RTT, the delays the peer's acks took, the peer's
    /// adaptive floor), at most `maximumAckDeadline`. The delays term is the smoothed
    /// send-to-ack delay plus 4 × its deviation (RFC 6298's SRTT + 4 × RTTVAR, at least
    /// 1.25 × the delay). The floor starts at `minimumAckDeadline`, grows to 1.5 × the wait
    /// that was too short with every fallback and shrinks 1 % with every ack in time, so a
    /// loaded receiver does not turn every realtime item into a second, queued copy. Registered per (peer, eventID): the copy
    /// of the same item sent to another peer waits for that peer's ack, with that peer's deadline.
    func expectAck(_ item: DeliveryItem, from peer: DeviceID) {
        expectAck(item, from: peer, floor: peerStates[peer]?.ackWaitFloor ?? options.minimumAckDeadline,
                  roundTripNanoseconds: peerStates[peer]?.roundTripNanoseconds, sentAt: now())
    }

    /// As `expectAck(_:from:)`, with the peer's floor and RTT already read, sent at the
    /// monotonic instant `sentAt` (the send path has just read the clock).
    func expectAck(_ item: DeliveryItem, from peer: DeviceID, floor: Double, roundTripNanoseconds: Int64?, sentAt: UInt64) {
        let rtt = Double(roundTripNanoseconds ?? 0) / 1e9
        let seconds = min(options.maximumAckDeadline, max(options.minimumAckDeadline, floor, 4 * rtt))
        let deadline = sentAt &+ UInt64(seconds * 1e9)
        awaitingAck.insert(item, for: peer, deadline: deadline, sentAt: sentAt)
        ackTimeline.insert(item.eventID, deadline: deadline)
        // Re-armed only for a deadline earlier than the next wake-up (another peer's shorter
        // deadline, or a shrunk floor): at a steady deadline, one wake-up serves many items.
        if deadline < ackWatchdogAt { armAckWatchdog(at: deadline) }
    }

    /// `peer` acked `eventID`: its copy stops waiting (and its floor shrinks). Another peer's
    /// copy of the same event keeps waiting for that peer's own ack.
    func realtimeAcked(_ eventID: UUID, from peer: DeviceID, at now: UInt64) {
        guard let wait = awaitingAck.remove(eventID, for: peer) else { return }
        counters.realtimeAcked &+= 1
        let minimum = options.minimumAckDeadline, delay = Double(now &- min(now, wait.sentAt)) / 1e9
        if let slot = peerStates.index(forKey: peer) { peerStates.values[slot].ackArrivedInTime(minimumDeadline: minimum, delay: delay) }
    }

    /// Wakes `watchAcks` at the monotonic instant `deadline` (replacing an armed later wake-up):
    /// a task scheduled on the router's own loop (no timer thread, no cross-thread wake-up of
    /// the loop).
    func armAckWatchdog(at deadline: UInt64) {
        ackWatchdog?.cancel()
        let now = now()
        let delay = TimeAmount.nanoseconds(Int64(clamping: deadline > now ? deadline - now : 0))
        let router = self
        ackWatchdogAt = deadline
        ackWatchdog = loop.scheduleTask(in: delay) { router.onLoop { $0.watchAcks() } }
    }

    /// Falls back what expired, earliest deadline first, whatever its peer, each copy to its own
    /// peer's outbox, and re-arms for the earliest deadline left; stops when nothing waits (the
    /// next `expectAck` arms it again).
    func watchAcks() {
        (ackWatchdog, ackWatchdogAt) = (nil, .max)
        let now = now()
        while let next = ackTimeline.earliest {
            if next.deadline > now {
                guard awaitingAck.isWaiting(next.eventID, deadline: next.deadline) else {
                    // Acked, fallen back on a channel loss or an unpair, or waiting again with another deadline.
                    ackTimeline.removeEarliest()
                    continue
                }
                armAckWatchdog(at: next.deadline)
                return
            }
            ackTimeline.removeEarliest()
            guard let waiting = awaitingAck.removeExpired(next.eventID, deadline: next.deadline) else { continue }
            if let slot = peerStates.index(forKey: waiting.peer) {
                peerStates.values[slot].ackTimedOut(minimumDeadline: options.minimumAckDeadline, maximumDeadline: options.maximumAckDeadline)
            }
            fallBack(waiting.item, to: waiting.peer)
        }
        ackTimeline.removeAll()
    }
}
