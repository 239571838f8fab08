import Foundation
import MeshCrypto
import MeshCore
import SessionMesh

/// Messages from peer daemons: decoded and dispatched here; the receive side's decisions are
/// `InboxPipeline`'s (dedup, backlog, what a transaction stores and acks) and `InboxHandOut`'s
/// (which sink gets which stored item when).
extension InboundConsumer {
    func handle(_ router: isolated DeliveryRouter, _ inbound: InboundChannelMessage) async {
        guard let message = decode(router, inbound) else { return }
        let peer = inbound.peer
        if handleRealtime(router, message, from: peer, path: inbound.path) { return }
        switch message {
        case .realtime, .realtimeAck, .realtimeAcks, .realtimeBatch: break
        case .reliableBatch(let items): queueForInbox(.batch(items), from: peer)
        case .reliableAck(let upTo): router.sender.reliableAcked(router, upTo: upTo, from: peer)
        case .reliableResend: queueForInbox(.resend, from: peer)
        case .reliableRoom: router.sender.reliableRoom(router, from: peer)
        case .snapshotPush(let bytes): await router.directory.snapshotReceived(router, bytes, from: peer, isReply: false)
        case .snapshotReply(let bytes): await router.directory.snapshotReceived(router, bytes, from: peer, isReply: true)
        case .snapshotRequest(let bytes): await router.directory.snapshotRequestReceived(router, bytes, from: peer)
        case .anchor(let record): await router.directory.anchorReceived(router, record, from: peer)
        case .session(let record): await router.directory.sessionReceived(router, record, from: peer)
        case .sessionHandOver(let owner, let record): await router.directory.handOverReceived(router, owner: owner, record, from: peer)
        case .watermark(let sessionID, let featureID, let sequence):
            router.directory.watermarkReceived(router, sessionID: sessionID, featureID: featureID, sequence: sequence, from: peer)
        case .presence(let features): router.presenceReceived(features, from: peer)
        }
    }

    /// Decodes a peer's message (the channel authenticated the sender; its `.paired` event may
    /// still be on its way, so the peer is registered first). Nil, counted, when malformed.
    func decode(_ router: isolated DeliveryRouter, _ inbound: InboundChannelMessage) -> DeliveryMessage? {
        router.ensurePeer(inbound.peer)
        do {
            return try DeliveryMessage(decoding: inbound.bytes)
        } catch {
            router.counters.malformed &+= 1
            router.logger.trace("malformed delivery message dropped", metadata: ["peer.id": "\(inbound.peer.short)", "error": "\(error)"])
            return nil
        }
    }

    /// Handles realtime items and their acks (synchronous: no await on this path); false for
    /// every other message.
    func handleRealtime(_ router: isolated DeliveryRouter, _ message: DeliveryMessage, from peer: DeviceID, path: PingPath) -> Bool {
        switch message {
        case .realtime(let item): realtimeReceived(router, item, from: peer, path: path)
        case .realtimeAck(let eventID): router.sender.realtimeAcked(router, eventID, from: peer, at: router.now())
        case .realtimeAcks(let eventIDs):
            let at = router.now()
            for eventID in eventIDs { router.sender.realtimeAcked(router, eventID, from: peer, at: at) }
        case .realtimeBatch(let items): for item in items { realtimeReceived(router, item, from: peer, path: path) }
        default: return false
        }
        return true
    }

    /// A realtime item: to the attached apps at once, or into the inbox (`InboxPipeline`).
    func realtimeReceived(_ router: isolated DeliveryRouter, _ item: DeliveryItem, from peer: DeviceID, path: PingPath) {
        router.counters.realtimeReceived &+= 1
        guard item.matchesEnvelope else { return refuseItem(router, from: peer) }
        let sinks = router.sinks(for: item.featureID)
        switch inbox.realtimeReceived(item, from: peer, path: path, appAttached: !sinks.isEmpty) {
        case .duplicate:
            router.counters.realtimeDuplicates &+= 1
            queueAckNow(router, item.eventID, to: peer, path: path)
        case .full: router.counters.inboxBacklogDropped &+= 1
        case .queued: inboxSignalQueue.yield()
        case .live:
            let event = DeliveryEvent.envelope(from: router.key(peer), inboxID: 0, redelivery: false, mode: item.kind, encoded: item.payload)
            for sink in sinks { router.handOut.emitLive(router, event, to: sink) }
            queueAckNow(router, item.eventID, to: peer, path: path)
        }
    }

    /// Counts a refused item (its header disagrees with its envelope) and warns (rate-limited).
    private func refuseItem(_ router: isolated DeliveryRouter, from peer: DeviceID) {
        router.counters.itemsRefused &+= 1
        router.warnPeerFault("refused a received item whose header disagrees with its envelope", peer: peer)
    }

    /// Persists the realtime event IDs delivered since the last flush (one transaction per peer),
    /// so a queued copy arriving after a restart is still a duplicate.
    func flushSeen(_ router: isolated DeliveryRouter) async {
        guard !inbox.seenToRecord.isEmpty else { return }
        // Peers in ID order (a handful, every 100 ms), not in the dictionary's hash order.
        let batch = inbox.takeSeenToRecord().sorted { $0.key < $1.key }.map { (router.key($0.key), $0.value) }
        let store = router.store
        do {
            // No per-ID queries: these passed the pipeline's dedup.
            _ = try await router.worker.run { for (peer, ids) in batch { _ = try store.inbox.recordSeen(from: peer, eventIDs: ids, lookUp: false) } }
        } catch {
            router.noteStoreError(error, "could not remember delivered realtime event ids")
        }
    }

    func queueForInbox(_ work: DeliveryInboxWork, from peer: DeviceID) {
        inbox.queue(work, from: peer)
        inboxSignalQueue.yield()
    }

    /// Takes everything received meanwhile and stores it per peer in one transaction each, so
    /// a slow disk commits many batches per fsync; arrival order is kept per peer.
    func consumeInboxWork(_ router: isolated DeliveryRouter) async {
        for await _ in inboxSignal { await storeInboxBacklog(router) }
    }

    /// Stores the pipeline's backlog (and what arrives while it does), per peer in arrival
    /// order. The fuzz harness calls it directly to process a message completely.
    func storeInboxBacklog(_ router: isolated DeliveryRouter) async {
        var rounds = 0
        while !inbox.backlog.isEmpty, rounds < 1_000_000 {
            rounds += 1
            for (peer, works) in inbox.takeBacklog() {
                await store(router, works, from: peer)
                inbox.finished(works, from: peer)
                releaseInboxRoom()
            }
        }
    }

    /// Stores received items in the inbox (one transaction), acks them (cumulative ack for
    /// batches, one ack per realtime item), then hands the new ones to the apps.
    private func store(_ router: isolated DeliveryRouter, _ works: [DeliveryInboxWork], from peer: DeviceID) async {
        // Received before the device was unpaired: not stored. (Checked right before the store
        // call is issued: the unpairing's delete of the device's rows comes after it on the
        // serial worker whenever this check passed.)
        guard !inbound.refuses(peer) else { return }
        var awaitingResend = router.peerStates[peer]?.awaitingResend ?? false
        var transaction = inbox.transaction(works, awaitingResend: &awaitingResend)
        router.peerStates[peer]?.awaitingResend = awaitingResend
        for _ in 0..<transaction.refused { refuseItem(router, from: peer) }
        router.counters.inboxAfterRefusal &+= transaction.afterRefusal
        router.counters.inboxDuplicates &+= transaction.inboxDuplicates
        router.counters.realtimeDuplicates &+= transaction.realtimeDuplicates
        let store = router.store, key = router.key(peer), at = router.wallNow(), toStore = transaction.fresh
        // Features whose apps get the new items straight after the commit: the commit records
        // that delivery too, instead of a transaction of its own (an fsync and ≈ 10 % of the
        // receiver's CPU per reliable item). Should an app detach meanwhile, its items are marked
        // as redeliveries when handed later: a mark too many, never one too few.
        let handedOut: Set<String> = router.options.testBugHandOutBeforeDurable ? []
            : Set(toStore.map(\.featureID)).filter { router.handOut.handsDirectly(router, $0) }
        let receipts: [InboxReceipt]
        do {
            // What fits is stored even when the rest does not: a batch larger than the room left
            // would otherwise be refused whole at every resend, and never get through.
            receipts = try await router.worker.run {
                try store.inbox.receive(from: key, items: toStore, at: at, storingWhatFits: true, handedOutFeatures: handedOut)
            }
        } catch {
            router.counters.inboxRefused &+= UInt64(toStore.count)
            if let suppressed = inboxRefusedWarning.admit(now: router.now()) {
                router.logger.warning("inbox refused received items; the sender will retry",
                                      metadata: ["error": "\(error)", "suppressed": "\(suppressed)"])
            }
            if transaction.refusable { router.peerStates[peer]?.refusedBatch() }
            return
        }
        let acks = transaction.acks(storedCount: receipts.count)
        if acks.unstored > 0 {
            router.counters.inboxRefused &+= UInt64(acks.unstored)
            if let suppressed = inboxFullWarning.admit(now: router.now()) {
                router.logger.warning("inbox full: stored the first received items, the sender will resend the rest", metadata: [
                    "stored": "\(receipts.count)", "refused": "\(acks.unstored)", "suppressed": "\(suppressed)"])
            }
            if acks.refusedBatch { router.peerStates[peer]?.refusedBatch() }
            transaction.fresh.removeLast(acks.unstored)
        }
        if let upTo = acks.upTo { router.sender.sendReliableAck(router, upTo: upTo, to: peer) }
        for (eventID, path) in acks.realtime { queueAckNow(router, eventID, to: peer, path: path) }
        var stored: [InboxEntry] = []
        for (item, receipt) in zip(transaction.fresh, receipts) {
            switch receipt {
            case .stored(let id):
                inbox.rememberStored(item.eventID)
                stored.append(InboxEntry(id: id, peer: key, item: item, receivedAt: at, deliveryCount: 0))
            case .duplicate:
                router.counters.inboxDuplicates &+= 1
            }
        }
        router.counters.inboxStored &+= UInt64(stored.count)
        for feature in Set(stored.map(\.item.featureID)).sorted() {
            await router.handOut.hand(router, stored.filter { $0.item.featureID == feature }, to: router.sinks(for: feature), recorded: handedOut.contains(feature))
        }
    }
}
