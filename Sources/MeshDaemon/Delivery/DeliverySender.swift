import Foundation
import Logging
import MeshCrypto
import MeshCore
import NIOCore
import SessionMesh

/// The router's sending side: realtime sends (datagram and ack wait, the ack watchdog, the
/// fallback to the outbox, one loop turn's datagrams packed per peer) and reliable sends (the
/// group commit, the per-peer pump, retries, room notices, acks and the delete of what a peer
/// acknowledged). docs/DELIVERY.md describes the protocol.
///
/// Owns the realtime ack waits and the turn's datagrams (`RealtimeSender`), the watchdog's loop
/// timer and the outbox rows. Each peer's `ReliableOutbox` and ack-delay estimate stay in the
/// router's peer table (`DeliveryPeerState`), which the receiving side shares. Its methods take
/// the router `isolated`: they run on the router's executor, so a send adds no hop and no
/// suspension point.
final class DeliverySender {
    /// Realtime sends: ack waits and deadlines, fallbacks, one loop turn's datagrams.
    var realtime: RealtimeSender
    /// The ack watchdog's loop timer, armed at `realtime.watchdogAt`.
    var ackWatchdog: Scheduled<Void>?
    /// The outbox rows in the store.
    let outboxRows: OutboxRows

    init(options: DeliveryRouterOptions, outboxRows: OutboxRows) {
        self.realtime = RealtimeSender(minimumAckDeadline: options.minimumAckDeadline,
                                       maximumAckDeadline: options.maximumAckDeadline)
        self.outboxRows = outboxRows
    }

    /// `DeliveryRouter.send(metadata:encoded:mode:to:)` to the resolved `peers`.
    func send(_ router: isolated DeliveryRouter, metadata: SessionSyncMetadata, encoded: [UInt8], mode: UInt8,
              to peers: [DeviceID]) async throws -> DeliverySendOutcome {
        let item = DeliveryItem(eventID: metadata.eventID, kind: mode, featureID: metadata.featureID,
                                sessionID: metadata.sessionID, payload: encoded)
        if mode == DeliveryItem.Kind.reliableEnvelope.rawValue {
            try await enqueueReliable(router, item, for: peers)
            // No paired device: nothing was queued (docs/LOCAL-API.md: `sent`, 0 peers).
            return DeliverySendOutcome(outcome: peers.isEmpty ? "sent" : "queued", peers: peers.count)
        }
        return sendRealtime(router, item, to: peers)
    }

    /// The peers `target` names when that is known without asking the node: a full device ID,
    /// or every paired device (nil/empty/"all"). Nil for anything else (a short ID, a name),
    /// which `DeliveryRouter.targets(_:)` resolves asynchronously.
    func knownTargets(_ router: isolated DeliveryRouter, _ target: String?) -> [DeviceID]? {
        // A full device ID (never blank, never "all"): no trimming needed.
        if let target, let exact = router.peersByKey[target] { return [exact] }
        guard DeliveryRouter.meansEveryPeer(target) else { return nil }
        return router.peerStates.count == 1 ? Array(router.peerStates.keys) : router.peerStates.keys.sorted()
    }

    /// `DeliveryRouter.sendImmediately`: a non-reliable send done without suspending.
    func sendImmediately(_ router: isolated DeliveryRouter, _ metadata: SessionSyncMetadata, encoded: [UInt8], mode: UInt8,
                         to target: String?, atOnce: Bool) -> DeliverySendOutcome? {
        guard mode != DeliveryItem.Kind.reliableEnvelope.rawValue, let peers = knownTargets(router, target) else { return nil }
        let item = DeliveryItem(eventID: metadata.eventID, kind: mode, featureID: metadata.featureID,
                                sessionID: metadata.sessionID, payload: encoded)
        return sendRealtime(router, item, to: peers, atOnce: atOnce)
    }

    /// `DeliveryRouter.enqueueReliableNow`: a reliable send started without a task.
    func enqueueReliableNow(_ router: isolated DeliveryRouter, _ metadata: SessionSyncMetadata, encoded: [UInt8],
                            to target: String?, reply: @escaping (Result<DeliverySendOutcome, MeshError>) -> Void) -> Bool {
        // No paired device: the asynchronous `send` answers (a reply from inside this call would
        // start the connection's next queued request from inside this one, and so on).
        guard let peers = knownTargets(router, target), !peers.isEmpty else { return false }
        let item = DeliveryItem(eventID: metadata.eventID, kind: DeliveryItem.Kind.reliableEnvelope.rawValue,
                                featureID: metadata.featureID, sessionID: metadata.sessionID, payload: encoded)
        commitReliable(router, item, for: peers, reply: reply)
        return true
    }

    /// Durably queues `item` for every peer (concurrent callers share commits) and starts
    /// sending; throws `queue-full` or a store error (nothing queued for any target is lost).
    func enqueueReliable(_ router: isolated DeliveryRouter, _ item: DeliveryItem, for peers: [DeviceID]) async throws {
        guard !peers.isEmpty else { return }
        let result: Result<DeliverySendOutcome, MeshError> = await withCheckedContinuation { continuation in
            commitReliable(router, item, for: peers) { continuation.resume(returning: $0) }
        }
        _ = try result.get()
    }

    /// The one path of reliable sends: the item goes to the group committer for every target
    /// (no task: writes submitted in call order are committed in that order, so one caller's
    /// sends keep their per-peer order), and `reply` runs on the router's loop once all are done.
    private func commitReliable(_ router: isolated DeliveryRouter, _ item: DeliveryItem, for peers: [DeviceID],
                                reply: @escaping (Result<DeliverySendOutcome, MeshError>) -> Void) {
        let outbox = item.outboxItem(createdAt: router.wallNow())
        let loop = router.loop
        let waiting = NIOLoopBound(ReliableSendWait(peers: peers, reply: reply), eventLoop: loop)
        for (index, peer) in peers.enumerated() {
            router.committer.enqueue(peer: router.key(peer), item: outbox, on: loop) { [router] result in
                router.onLoop { router in
                    let waiting = waiting.value
                    if waiting.record(result, at: index) { router.sender.finishReliable(router, waiting) }
                }
            }
        }
    }

    /// All targets of a reliable send are committed: pumps, counters, and the reply.
    private func finishReliable(_ router: isolated DeliveryRouter, _ waiting: ReliableSendWait) {
        waiting.forEachCommitted { peer, receipt in queued(router, receipt, for: peer) }
        guard let failure = waiting.failure else {
            router.counters.reliableEnqueued &+= UInt64(waiting.peers.count)
            waiting.reply(.success(DeliverySendOutcome(outcome: "queued", peers: waiting.peers.count)))
            return
        }
        waiting.reply(.failure(enqueueFailure(router, failure)))
    }

    /// The error a reliable send reports when its item could not be queued, counted
    /// (`ReliableSendWait.failure(for:)`).
    func enqueueFailure(_ router: isolated DeliveryRouter, _ error: any Error) -> MeshError {
        let (failure, refused) = ReliableSendWait.failure(for: error)
        if refused { router.counters.reliableRefused &+= 1 } else { router.counters.storeErrors &+= 1 }
        return failure
    }

    /// A realtime item to each of `peers`: `queued` when any copy went to the outbox, else
    /// `pending` when any waits for a first activation, else `sent`.
    func sendRealtime(_ router: isolated DeliveryRouter, _ item: DeliveryItem, to peers: [DeviceID],
                      atOnce: Bool = false) -> DeliverySendOutcome {
        var outcome = "sent"
        for peer in peers {
            switch sendRealtime(router, item, to: peer, atOnce: atOnce) {
            case "queued": outcome = "queued"
            case "pending" where outcome == "sent": outcome = "pending"
            default: break
            }
        }
        return DeliverySendOutcome(outcome: outcome, peers: peers.count)
    }

    /// One realtime item to one peer (`RealtimeSender.send`); returns the outcome word.
    func sendRealtime(_ router: isolated DeliveryRouter, _ item: DeliveryItem, to peer: DeviceID, atOnce: Bool = false) -> String {
        // In place through `peerStates.values`: `peerStates[peer]?.…` moved the state out of the
        // dictionary and back through a coroutine frame (≈ 2 000 instructions per message).
        guard let slot = router.peerStates.index(forKey: peer) else { return "queued" }
        switch realtime.send(item, to: peer, state: &router.peerStates.values[slot], now: router.now(), atOnce: atOnce) {
        case .pending(let droppedOldest):
            if droppedOldest { router.counters.pendingDropped &+= 1 }
            return "pending"
        case .fallBack:
            fallBack(router, item, to: peer)
            return "queued"
        case .sent(let wakeAt, let datagram, let scheduleFlush):
            if let wakeAt { armAckWatchdog(router, at: wakeAt) }
            router.counters.realtimeSent &+= 1
            // A datagram that fails to go out falls its items back to the outbox.
            if let datagram {
                sendRealtimeDatagram(router, datagram, items: 1, to: peer, batched: false, or: CollectionOfOne(item.eventID))
            }
            if scheduleFlush { scheduleRealtimeFlush(router) }
            return "sent"
        }
    }

    /// A drained pre-activation item: realtime message on the ordered stream, ack still expected.
    func sendRealtimeOnStream(_ router: isolated DeliveryRouter, _ item: DeliveryItem, to peer: DeviceID) {
        expectAck(router, item, from: peer)
        if router.transmit(.realtime(item), to: peer, path: .stream) {
            router.counters.realtimeSent &+= 1
        } else if realtime.stopWaiting(item.eventID, for: peer) != nil {
            fallBack(router, item, to: peer)
        }
    }

    /// The items buffered before `peer`'s first activation, in arrival order, on the ordered
    /// stream path (a realtime item still expects its ack).
    func sendDrained(_ router: isolated DeliveryRouter, _ drained: [PendingDeliveryQueue<DeliveryItem, [UInt8]>.Item],
                     to peer: DeviceID) {
        for item in drained {
            switch item {
            case .envelope(let envelope): sendRealtimeOnStream(router, envelope, to: peer)
            case .snapshot(let message):
                if router.transmitRaw(message, to: peer) { router.counters.snapshotsPushed &+= 1 }
            }
        }
    }

    /// Puts a realtime item into the durable outbox (same event ID, so the receiver dedups).
    func fallBack(_ router: isolated DeliveryRouter, _ item: DeliveryItem, to peer: DeviceID) {
        router.counters.realtimeFallbacks &+= 1
        router.committer.enqueue(peer: router.key(peer), item: item.outboxItem(createdAt: router.wallNow()),
                                 on: router.loop) { [router] result in
            router.onLoop { router in
                switch result {
                case .success(let receipt): router.sender.queued(router, receipt, for: peer)
                case .failure(let error): router.noteStoreError(error, "could not queue a realtime item that got no ack")
                }
            }
        }
    }

    /// An outbox row was committed for `peer`: its pump starts. When the peer was unpaired
    /// while the commit ran, `unpaired` may have dropped the peer's outbox before the row
    /// landed, and the row would wait forever for a device that is gone (listed by `meshctl
    /// queue`, counted against the limits): it is deleted instead.
    func queued(_ router: isolated DeliveryRouter, _ receipt: OutboxReceipt, for peer: DeviceID) {
        guard router.peerStates[peer] == nil else {
            schedulePump(router, peer)
            return
        }
        router.spawn { router in
            do {
                try await router.sender.outboxRows.drop(receipt.id)
            } catch {
                router.noteStoreError(error, "could not delete an item queued for an unpaired device")
            }
        }
    }

    // MARK: - Acks of realtime items

    /// Registers the ack deadline of `item` sent to `peer` now (`RealtimeSender.expectAck`).
    func expectAck(_ router: isolated DeliveryRouter, _ item: DeliveryItem, from peer: DeviceID) {
        if let wakeAt = realtime.expectAck(item, from: peer, peers: router.peerStates, sentAt: router.now()) {
            armAckWatchdog(router, at: wakeAt)
        }
    }

    /// `peer` acked `eventID` (`RealtimeSender.acked`: the copy stops waiting, the peer's floor
    /// shrinks). Another peer's copy of the same event keeps waiting.
    func realtimeAcked(_ router: isolated DeliveryRouter, _ eventID: UUID, from peer: DeviceID, at now: UInt64) {
        if realtime.acked(eventID, from: peer, at: now, peers: &router.peerStates) { router.counters.realtimeAcked &+= 1 }
    }

    /// This peer's copies still waiting for its ack go to its outbox now (its channel went
    /// down; other peers' copies of the same items keep waiting for their own acks).
    func fallBackWaiting(_ router: isolated DeliveryRouter, for peer: DeviceID) {
        for waiting in realtime.stopWaiting(for: peer) {
            fallBack(router, waiting.item, to: peer)
        }
    }

    /// Wakes `watchAcks` at the monotonic instant `deadline` (replacing an armed later wake-up):
    /// a task scheduled on the router's own loop (no timer thread, no cross-thread wake-up).
    func armAckWatchdog(_ router: isolated DeliveryRouter, at deadline: UInt64) {
        ackWatchdog?.cancel()
        let now = router.now()
        let delay = TimeAmount.nanoseconds(Int64(clamping: deadline > now ? deadline - now : 0))
        ackWatchdog = router.loop.scheduleTask(in: delay) { [router] in router.onLoop { $0.sender.watchAcks($0) } }
    }

    /// Falls back the copies whose ack is late, each to its own peer's outbox, and re-arms for
    /// the earliest deadline left (`RealtimeSender.expire`: the late copies' peers' floors grow).
    func watchAcks(_ router: isolated DeliveryRouter) {
        ackWatchdog = nil
        let (expired, wakeAt) = realtime.expire(now: router.now(), peers: &router.peerStates)
        for waiting in expired { fallBack(router, waiting.item, to: waiting.peer) }
        if let wakeAt { armAckWatchdog(router, at: wakeAt) }
    }
}
