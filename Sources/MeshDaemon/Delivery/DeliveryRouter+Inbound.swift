import Foundation
import MeshCrypto
import MeshCore
import SessionMesh

/// Messages from peer daemons.
extension DeliveryRouter {
    /// Returns once the inbox pipeline holds less than `options.inboxBacklogBytes` (or the
    /// router stops).
    func waitForInboxRoom() async {
        guard inboxBacklogBytes >= options.inboxBacklogBytes, !stoppingInbound else { return }
        await withCheckedContinuation { inboxRoomWaiters.append($0) }
    }

    /// Resumes the inbound consumer when the pipeline has room (or always, when `force`).
    func releaseInboxRoom(force: Bool = false) {
        guard !inboxRoomWaiters.isEmpty, force || inboxBacklogBytes < options.inboxBacklogBytes else { return }
        let waiters = inboxRoomWaiters
        inboxRoomWaiters = []
        for waiter in waiters { waiter.resume() }
    }

    /// The router stops: nothing waits for inbox room any more.
    func stopInboundWaits() {
        stoppingInbound = true
        releaseInboxRoom(force: true)
        resumeInboundConsumers()
        stopTicks()
        resumeDeliveryWaits()
    }

    /// Whether a received item is what its item header says: a known kind, an envelope that
    /// decodes, with the item's event ID, feature and session. A peer's item that is not is
    /// refused (counted): an app never gets an envelope of a feature it did not attach, nor one
    /// envelope under two event IDs.
    static func itemMatchesEnvelope(_ item: DeliveryItem) -> Bool {
        guard item.kind == DeliveryItem.Kind.realtimeEnvelope.rawValue || item.kind == DeliveryItem.Kind.reliableEnvelope.rawValue
                || item.kind == DeliveryItem.Kind.acknowledgementEnvelope.rawValue,
              let metadata = try? SessionWireCodec.decodeEnvelopeMetadata(item.payload) else { return false }
        return metadata.eventID == item.eventID && metadata.featureID == item.featureID && item.sessionID == metadata.sessionID
    }

    /// Counts a refused item and warns (rate-limited).
    func refuseItem(_ item: DeliveryItem, from peer: DeviceID) {
        counters.itemsRefused &+= 1
        warnPeerFault("refused a received item whose header disagrees with its envelope", peer: peer)
    }

    /// From the tick: one line for each kind of warning held back since it was last written
    /// (so the last burst of a fault is reported too, not only when it happens again).
    func summariseHeldWarnings() {
        let now = now()
        if let held = peerFaultWarning.summary(now: now) {
            logger.warning("more refused messages from peers (warnings held back)", metadata: ["suppressed": "\(held)"])
        }
        if let held = inboxFullWarning.summary(now: now) {
            logger.warning("inbox still full: more received items refused (warnings held back)", metadata: ["suppressed": "\(held)"])
        }
        if let held = inboxRefusedWarning.summary(now: now) {
            logger.warning("inbox still refusing received items (warnings held back)", metadata: ["suppressed": "\(held)"])
        }
        if let held = storeErrorWarning.summary(now: now) {
            logger.error("more store errors (held back)", metadata: ["suppressed": "\(held)"])
        }
    }

    /// A warning about something a peer sent, at most once per 10 s (with how many were held back).
    func warnPeerFault(_ message: String, peer: DeviceID) {
        guard let suppressed = peerFaultWarning.admit(now: now()) else { return }
        logger.warning("\(message)", metadata: ["peer.id": "\(peer.short)", "suppressed": "\(suppressed)"])
    }

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
        let peer = inbound.peer
        ensurePeer(peer)
        do {
            return try DeliveryMessage(decoding: inbound.bytes)
        } catch {
            counters.malformed &+= 1
            logger.trace("malformed delivery message dropped", metadata: ["peer.id": "\(peer.short)", "error": "\(error)"])
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

    // MARK: - Realtime

    /// A realtime item: to the attached apps at once (and remembered for dedup), or into the
    /// inbox when none is attached; acked either way once it is safe.
    func realtimeReceived(_ item: DeliveryItem, from peer: DeviceID, path: PingPath) {
        counters.realtimeReceived &+= 1
        guard Self.itemMatchesEnvelope(item) else {
            refuseItem(item, from: peer)
            return
        }
        let sinks = sinks(for: item.featureID)
        // Handed live only with an app attached here and no earlier item of this feature on its
        // way to the inbox. A live item is looked up and remembered in one pass over the set.
        // (Both tables are empty unless items wait for the inbox: no hashing then.)
        let live = !sinks.isEmpty && (realtimeInPipeline.isEmpty || (realtimeInPipeline[peer]?[item.featureID] ?? 0) == 0)
        let duplicate = (!inboxInFlight.isEmpty && inboxInFlight[item.eventID] != nil)
            || (live ? !realtimeSeen.insert(item.eventID) : realtimeSeen.contains(item.eventID))
        if duplicate {
            counters.realtimeDuplicates &+= 1
            queueAckNow(item.eventID, to: peer, path: path)
            return
        }
        guard live else {
            // Keep it in the inbox, in order; acked once stored. Not taken (and not acked: the
            // sender falls back to its outbox) while the pipeline is full.
            guard inboxBacklogBytes < options.inboxBacklogBytes else {
                counters.inboxBacklogDropped &+= 1
                return
            }
            queueForInbox(.realtime(item, path: path), from: peer)
            return
        }
        seenToRecord[peer, default: []].append(item.eventID)
        for sink in sinks {
            emitLive(.envelope(from: key(peer), inboxID: 0, redelivery: false, mode: item.kind, encoded: item.payload), to: sink)
        }
        queueAckNow(item.eventID, to: peer, path: path)
    }

    /// Remembers an event ID in memory (both paths check it); `persist` also records it in the
    /// store's seen-set at the next flush (realtime items, which never enter the inbox).
    func rememberRealtime(_ eventID: UUID, from peer: DeviceID, persist: Bool = true) {
        guard realtimeSeen.insert(eventID) else { return }
        if persist { seenToRecord[peer, default: []].append(eventID) }
    }

    /// Persists the realtime event IDs delivered since the last flush (one transaction per peer),
    /// so a queued copy arriving after a restart is still a duplicate.
    func flushSeen() async {
        guard !seenToRecord.isEmpty else { return }
        let batch = Dictionary(uniqueKeysWithValues: seenToRecord.map { (key($0.key), $0.value) })
        seenToRecord = [:]
        let store = self.store
        do {
            _ = try await worker.run {
                // No per-ID queries: these passed `realtimeReceived`'s dedup against what the
                // router remembers (and `realtimeSeen` holds every ID stored in the inbox lately).
                for (peer, ids) in batch { _ = try store.recordSeen(from: peer, eventIDs: ids, lookUp: false) }
            }
        } catch {
            noteStoreError(error, "could not remember delivered realtime event ids")
        }
    }

    // MARK: - Inbox transactions

    func queueForInbox(_ work: DeliveryInboxWork, from peer: DeviceID) {
        inboxBacklogBytes += work.byteCount
        inboxBacklogPeakBytes = max(inboxBacklogPeakBytes, inboxBacklogBytes)
        for eventID in work.eventIDs { inboxInFlight[eventID, default: 0] += 1 }
        if case .realtime(let item, _) = work { realtimeInPipeline[peer, default: [:]][item.featureID, default: 0] += 1 }
        inboxBacklog.append((peer, work))
        inboxSignalQueue.yield()
    }

    /// Takes everything received meanwhile and stores it per peer in one transaction each, so
    /// a slow disk commits many batches per fsync; arrival order is kept per peer.
    func consumeInboxWork() async {
        for await _ in inboxSignal { await storeInboxBacklog() }
    }

    /// Stores everything in `inboxBacklog` (and what arrives while it does), per peer in
    /// arrival order. The fuzz harness calls it directly to process a message completely.
    func storeInboxBacklog() async {
        // `while`, not `for … where`: a `where` clause skips an iteration but does not end the
        // loop, and spinning through the rest of a large bound held the actor for milliseconds.
        var rounds = 0
        while !inboxBacklog.isEmpty, rounds < 1_000_000 {
            rounds += 1
            let taken = inboxBacklog
            inboxBacklog = []
            var order: [DeviceID] = []
            var byPeer: [DeviceID: [DeliveryInboxWork]] = [:]
            for (peer, work) in taken {
                if byPeer[peer] == nil { order.append(peer) }
                byPeer[peer, default: []].append(work)
            }
            for peer in order {
                let works = byPeer.removeValue(forKey: peer) ?? []
                await store(works, from: peer)
                // Counted until stored: the items are in memory until then.
                inboxBacklogBytes = max(0, inboxBacklogBytes - works.reduce(0) { $0 + $1.byteCount })
                releaseInboxRoom()
            }
        }
    }

    /// Stores received items in the inbox (one transaction), acks them (cumulative ack for
    /// batches, one ack per realtime item), then hands the new ones to the apps.
    func store(_ works: [DeliveryInboxWork], from peer: DeviceID) async {
        defer {
            for case .realtime(let item, _) in works {
                let left = (realtimeInPipeline[peer]?[item.featureID] ?? 1) - 1
                realtimeInPipeline[peer]?[item.featureID] = left > 0 ? left : nil
            }
            for eventID in works.flatMap(\.eventIDs) {
                if let count = inboxInFlight[eventID], count > 1 { inboxInFlight[eventID] = count - 1 } else { inboxInFlight[eventID] = nil }
            }
        }
        var fresh: [InboxItem] = []
        // Every received item in arrival order: its batch sequence or realtime ack, and its
        // index in `fresh` (nil: a duplicate, not stored again).
        var received: [(sequence: UInt64?, ack: (UUID, PingPath)?, fresh: Int?)] = []
        var refusable = false    // a batch is among the items (a refusal then stops later ones)
        var freshIDs = Set<UUID>()   // one event ID is stored once, even when it comes twice here
        /// Notes one received item in order: fresh, or a duplicate when the router saw its ID.
        func receive(_ eventID: UUID, sequence: UInt64?, ack: (UUID, PingPath)?, as item: () -> InboxItem) -> Bool {
            guard !realtimeSeen.contains(eventID), freshIDs.insert(eventID).inserted else {
                received.append((sequence, ack, nil))
                return false
            }
            received.append((sequence, ack, fresh.count))
            fresh.append(item())
            return true
        }
        for work in works {
            switch work {
            case .resend:
                peerStates[peer]?.awaitingResend = false
            case .batch(let items):
                guard peerStates[peer]?.awaitingResend != true else {
                    counters.inboxAfterRefusal &+= UInt64(items.count)
                    continue
                }
                refusable = true
                for (sequence, item) in items {
                    guard Self.itemMatchesEnvelope(item) else {
                        // Refused, and acked with the rest: resending it would not make it valid.
                        refuseItem(item, from: peer)
                        received.append((sequence, nil, nil))
                        continue
                    }
                    if !receive(item.eventID, sequence: sequence, ack: nil, as: { item.inboxItem(senderSequence: sequence) }) {
                        counters.inboxDuplicates &+= 1
                    }
                }
            case .realtime(let item, let path):
                if !receive(item.eventID, sequence: nil, ack: (item.eventID, path), as: { item.inboxItem(senderSequence: 0) }) {
                    counters.realtimeDuplicates &+= 1
                }
            }
        }
        let store = self.store, key = key(peer), at = wallNow(), toStore = fresh
        // Features whose apps get the new items straight after the commit: the commit records
        // that delivery too, instead of a transaction of its own (an fsync and ≈ 10 % of the
        // receiver's CPU per reliable item). Should an app detach meanwhile, its items are marked
        // as redeliveries when handed later: a mark too many, never one too few.
        let handedOut: Set<String> = options.testBugHandOutBeforeDurable ? [] : Set(fresh.map(\.featureID)).filter { handsDirectly($0) }
        let receipts: [InboxReceipt]
        do {
            // What fits is stored even when the rest does not: a batch larger than the room left
            // would otherwise be refused whole at every resend, and never get through.
            receipts = try await worker.run {
                try store.receiveInbox(from: key, items: toStore, at: at, storingWhatFits: true, handedOutFeatures: handedOut)
            }
        } catch {
            counters.inboxRefused &+= UInt64(fresh.count)
            if let suppressed = inboxRefusedWarning.admit(now: now()) {
                logger.warning("inbox refused received items; the sender will retry",
                               metadata: ["error": "\(error)", "suppressed": "\(suppressed)"])
            }
            if refusable { peerStates[peer]?.refusedBatch() }
            return
        }
        // Acked: everything before the first item that was not stored (the ack is cumulative).
        let cut = received.firstIndex { ($0.fresh ?? -1) >= receipts.count } ?? received.count
        let lastSequence = received[..<cut].compactMap(\.sequence).max()
        let realtimeAcks = received[..<cut].compactMap(\.ack)
        if cut < received.count {
            counters.inboxRefused &+= UInt64(fresh.count - receipts.count)
            if let suppressed = inboxFullWarning.admit(now: now()) {
                logger.warning("inbox full: stored the first received items, the sender will resend the rest",
                               metadata: ["stored": "\(receipts.count)", "refused": "\(fresh.count - receipts.count)",
                                          "suppressed": "\(suppressed)"])
            }
            if received[cut...].contains(where: { $0.sequence != nil }) { peerStates[peer]?.refusedBatch() }
            fresh.removeLast(fresh.count - receipts.count)
        }
        if let lastSequence { sendReliableAck(upTo: lastSequence, to: peer) }
        for (eventID, path) in realtimeAcks { queueAckNow(eventID, to: peer, path: path) }
        var stored: [InboxEntry] = []
        for (item, receipt) in zip(fresh, receipts) {
            switch receipt {
            case .stored(let id):
                rememberRealtime(item.eventID, from: peer, persist: false)
                stored.append(InboxEntry(id: id, peer: key, item: item, receivedAt: at, deliveryCount: 0))
            case .duplicate:
                counters.inboxDuplicates &+= 1
            }
        }
        counters.inboxStored &+= UInt64(stored.count)
        for feature in Set(stored.map(\.item.featureID)).sorted() {
            await hand(stored.filter { $0.item.featureID == feature }, to: sinks(for: feature),
                       recorded: handedOut.contains(feature))
        }
    }
}

/// Received items waiting for an inbox transaction.
enum DeliveryInboxWork: Sendable {
    /// A reliable batch: cumulative ack after the commit.
    case batch([(sequence: UInt64, item: DeliveryItem)])
    /// A realtime item no app was attached for: acked on `path` after the commit.
    case realtime(DeliveryItem, path: PingPath)
    /// The sender starts its stream over from its last ack (in order with the batches: those
    /// sent before it were dropped or stored already).
    case resend

    /// Bytes it holds in memory (payloads and a fixed share per item), for the pipeline's bound.
    var byteCount: Int {
        switch self {
        case .batch(let items): items.reduce(0) { $0 + $1.item.payload.count + $1.item.featureID.utf8.count + 96 }
        case .realtime(let item, _): item.payload.count + item.featureID.utf8.count + 96
        case .resend: 0
        }
    }

    var eventIDs: [UUID] {
        switch self {
        case .batch(let items): items.map(\.item.eventID)
        case .realtime(let item, _): [item.eventID]
        case .resend: []
        }
    }
}
