import Foundation
import MeshCrypto
import MeshCore
import SessionMesh

/// Messages from peer daemons: decoded and dispatched here; the receive side's decisions are
/// `InboxPipeline`'s (dedup, backlog, what a transaction stores and acks) and
/// `InboxHandOut`'s (which sink gets which stored item when).
extension DeliveryRouter {
    func handle(_ inbound: InboundChannelMessage) async {
        guard let message = decodeInbound(inbound) else { return }
        let peer = inbound.peer
        if handleRealtime(message, from: peer, path: inbound.path) { return }
        switch message {
        case .realtime, .realtimeAck, .realtimeAcks, .realtimeBatch: break
        case .reliableBatch(let items): queueForInbox(.batch(items), from: peer)
        case .reliableAck(let upTo): reliableAcked(upTo: upTo, from: peer)
        case .reliableResend: queueForInbox(.resend, from: peer)
        case .reliableRoom: reliableRoom(from: peer)
        case .snapshotPush(let bytes): await snapshotReceived(bytes, from: peer, isReply: false)
        case .snapshotReply(let bytes): await snapshotReceived(bytes, from: peer, isReply: true)
        case .snapshotRequest(let bytes): await snapshotRequestReceived(bytes, from: peer)
        case .anchor(let record): await anchorReceived(record, from: peer)
        case .session(let record): await sessionReceived(record, from: peer)
        case .watermark(let sessionID, let featureID, let sequence):
            watermarkReceived(sessionID: sessionID, featureID: featureID, sequence: sequence, from: peer)
        case .presence(let features): presenceReceived(features, from: peer)
        }
    }

    /// Decodes a peer's message (the channel authenticated the sender; its `.paired` event may
    /// still be on its way, so the peer is registered first). Nil, counted, when malformed.
    func decodeInbound(_ inbound: InboundChannelMessage) -> DeliveryMessage? {
        ensurePeer(inbound.peer)
        do {
            return try DeliveryMessage(decoding: inbound.bytes)
        } catch {
            counters.malformed &+= 1
            logger.trace("malformed delivery message dropped", metadata: ["peer.id": "\(inbound.peer.short)", "error": "\(error)"])
            return nil
        }
    }

    /// Handles realtime items and their acks (synchronous: no await on this path); false for
    /// every other message.
    func handleRealtime(_ message: DeliveryMessage, from peer: DeviceID, path: PingPath) -> Bool {
        switch message {
        case .realtime(let item): realtimeReceived(item, from: peer, path: path)
        case .realtimeAck(let eventID): realtimeAcked(eventID, from: peer, at: now())
        case .realtimeAcks(let eventIDs):
            let at = now()
            for eventID in eventIDs { realtimeAcked(eventID, from: peer, at: at) }
        case .realtimeBatch(let items): for item in items { realtimeReceived(item, from: peer, path: path) }
        default: return false
        }
        return true
    }

    /// A realtime item: to the attached apps at once, or into the inbox (`InboxPipeline`).
    func realtimeReceived(_ item: DeliveryItem, from peer: DeviceID, path: PingPath) {
        counters.realtimeReceived &+= 1
        guard item.matchesEnvelope else { return refuseItem(from: peer) }
        let sinks = sinks(for: item.featureID)
        switch inbox.realtimeReceived(item, from: peer, path: path, appAttached: !sinks.isEmpty) {
        case .duplicate:
            counters.realtimeDuplicates &+= 1
            queueAckNow(item.eventID, to: peer, path: path)
        case .full: counters.inboxBacklogDropped &+= 1
        case .queued: inboxSignalQueue.yield()
        case .live:
            for sink in sinks {
                emitLive(.envelope(from: key(peer), inboxID: 0, redelivery: false, mode: item.kind, encoded: item.payload), to: sink)
            }
            queueAckNow(item.eventID, to: peer, path: path)
        }
    }

    /// Persists the realtime event IDs delivered since the last flush (one transaction per peer),
    /// so a queued copy arriving after a restart is still a duplicate.
    func flushSeen() async {
        guard !inbox.seenToRecord.isEmpty else { return }
        // Peers in ID order (a handful, every 100 ms), not in the dictionary's hash order.
        let batch = inbox.takeSeenToRecord().sorted { $0.key < $1.key }.map { (key($0.key), $0.value) }
        let store = self.store
        do {
            // No per-ID queries: these passed the pipeline's dedup.
            _ = try await worker.run { for (peer, ids) in batch { _ = try store.inbox.recordSeen(from: peer, eventIDs: ids, lookUp: false) } }
        } catch {
            noteStoreError(error, "could not remember delivered realtime event ids")
        }
    }

    func queueForInbox(_ work: DeliveryInboxWork, from peer: DeviceID) {
        inbox.queue(work, from: peer)
        inboxSignalQueue.yield()
    }

    /// Takes everything received meanwhile and stores it per peer in one transaction each, so
    /// a slow disk commits many batches per fsync; arrival order is kept per peer.
    func consumeInboxWork() async {
        for await _ in inboxSignal { await storeInboxBacklog() }
    }

    /// Stores the pipeline's backlog (and what arrives while it does), per peer in arrival
    /// order. The fuzz harness calls it directly to process a message completely.
    func storeInboxBacklog() async {
        var rounds = 0
        while !inbox.backlog.isEmpty, rounds < 1_000_000 {
            rounds += 1
            for (peer, works) in inbox.takeBacklog() {
                await store(works, from: peer)
                inbox.finished(works, from: peer)
                releaseInboxRoom()
            }
        }
    }

    /// Stores received items in the inbox (one transaction), acks them (cumulative ack for
    /// batches, one ack per realtime item), then hands the new ones to the apps.
    func store(_ works: [DeliveryInboxWork], from peer: DeviceID) async {
        // Received before the device was unpaired: not stored. (Checked right before the store
        // call is issued: the unpairing's delete of the device's rows comes after it on the
        // serial worker whenever this check passed.)
        guard !inbound.refuses(peer) else { return }
        var awaitingResend = peerStates[peer]?.awaitingResend ?? false
        var transaction = inbox.transaction(works, awaitingResend: &awaitingResend)
        peerStates[peer]?.awaitingResend = awaitingResend
        for _ in 0..<transaction.refused { refuseItem(from: peer) }
        counters.inboxAfterRefusal &+= transaction.afterRefusal
        counters.inboxDuplicates &+= transaction.inboxDuplicates
        counters.realtimeDuplicates &+= transaction.realtimeDuplicates
        let store = self.store, key = key(peer), at = wallNow(), toStore = transaction.fresh
        // Features whose apps get the new items straight after the commit: the commit records
        // that delivery too, instead of a transaction of its own (an fsync and ≈ 10 % of the
        // receiver's CPU per reliable item). Should an app detach meanwhile, its items are marked
        // as redeliveries when handed later: a mark too many, never one too few.
        let handedOut: Set<String> = options.testBugHandOutBeforeDurable ? [] : Set(toStore.map(\.featureID)).filter { handsDirectly($0) }
        let receipts: [InboxReceipt]
        do {
            // What fits is stored even when the rest does not: a batch larger than the room left
            // would otherwise be refused whole at every resend, and never get through.
            receipts = try await worker.run {
                try store.inbox.receive(from: key, items: toStore, at: at, storingWhatFits: true, handedOutFeatures: handedOut)
            }
        } catch {
            counters.inboxRefused &+= UInt64(toStore.count)
            if let suppressed = inboxRefusedWarning.admit(now: now()) {
                logger.warning("inbox refused received items; the sender will retry", metadata: ["error": "\(error)", "suppressed": "\(suppressed)"])
            }
            if transaction.refusable { peerStates[peer]?.refusedBatch() }
            return
        }
        let acks = transaction.acks(storedCount: receipts.count)
        if acks.unstored > 0 {
            counters.inboxRefused &+= UInt64(acks.unstored)
            if let suppressed = inboxFullWarning.admit(now: now()) {
                logger.warning("inbox full: stored the first received items, the sender will resend the rest", metadata: [
                    "stored": "\(receipts.count)", "refused": "\(acks.unstored)", "suppressed": "\(suppressed)"])
            }
            if acks.refusedBatch { peerStates[peer]?.refusedBatch() }
            transaction.fresh.removeLast(acks.unstored)
        }
        if let upTo = acks.upTo { sendReliableAck(upTo: upTo, to: peer) }
        for (eventID, path) in acks.realtime { queueAckNow(eventID, to: peer, path: path) }
        var stored: [InboxEntry] = []
        for (item, receipt) in zip(transaction.fresh, receipts) {
            switch receipt {
            case .stored(let id):
                inbox.rememberStored(item.eventID)
                stored.append(InboxEntry(id: id, peer: key, item: item, receivedAt: at, deliveryCount: 0))
            case .duplicate:
                counters.inboxDuplicates &+= 1
            }
        }
        counters.inboxStored &+= UInt64(stored.count)
        for feature in Set(stored.map(\.item.featureID)).sorted() {
            await hand(stored.filter { $0.item.featureID == feature }, to: sinks(for: feature), recorded: handedOut.contains(feature))
        }
    }
}
