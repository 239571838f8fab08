import Foundation
import MeshCrypto
import MeshLocalAPI

/// Messages from peer daemons.
extension DeliveryRouter {
    func consumeInbound() async {
        for await message in node.inboundMessages {
            await handle(message)
        }
    }

    func handle(_ inbound: InboundChannelMessage) async {
        let peer = inbound.peer
        // The channel authenticated the sender; its `.paired` event may still be on its way.
        ensurePeer(peer)
        let message: DeliveryMessage
        do {
            message = try DeliveryMessage(decoding: inbound.bytes)
        } catch {
            counters.malformed &+= 1
            logger.trace("malformed delivery message dropped", metadata: ["peer.id": "\(peer.short)", "error": "\(error)"])
            return
        }
        switch message {
        case .realtime(let item): await realtimeReceived(item, from: peer, path: inbound.path)
        case .realtimeAck(let eventID): realtimeAcked(eventID)
        case .reliableBatch(let items): inboxWorkQueue.yield((peer, items))
        case .reliableAck(let upTo): reliableAcked(upTo: upTo, from: peer)
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

    // MARK: - Realtime

    /// A realtime item: to the attached apps at once (and remembered for dedup), or into the
    /// inbox when none is attached; acked either way once it is safe.
    func realtimeReceived(_ item: DeliveryItem, from peer: DeviceID, path: PingPath) async {
        counters.realtimeReceived &+= 1
        if realtimeSeen.contains(item.eventID) {
            counters.realtimeDuplicates &+= 1
            await transmit(.realtimeAck(eventID: item.eventID), to: peer, path: path)
            return
        }
        let sinks = sinks(for: item.featureID)
        if sinks.isEmpty {
            let committer = self.committer, key = key(peer), inbox = item.inboxItem(senderSequence: 0), at = wallNow()
            do {
                if case .stored(let id) = try await committer.receive(from: key, item: inbox, at: at) {
                    rememberRealtime(item.eventID, from: peer, persist: false)
                    counters.inboxStored &+= 1
                    await hand([InboxEntry(id: id, peer: key, item: inbox, receivedAt: at, deliveryCount: 0)],
                               to: self.sinks(for: item.featureID))
                }
            } catch {
                noteStoreError(error, "could not store a realtime item for an absent app")
                return
            }
        } else {
            rememberRealtime(item.eventID, from: peer)
            for sink in sinks {
                sink.emit(.envelope(from: key(peer), inboxID: 0, redelivery: false, mode: item.kind, encoded: item.payload))
            }
        }
        await transmit(.realtimeAck(eventID: item.eventID), to: peer, path: path)
    }

    /// Remembers an event ID in memory (both paths check it); `persist` also records it in the
    /// store's seen-set at the next flush (realtime items, which never enter the inbox).
    func rememberRealtime(_ eventID: UUID, from peer: DeviceID, persist: Bool = true) {
        guard realtimeSeen.insert(eventID).inserted else { return }
        realtimeSeenOrder.append(eventID)
        if persist { seenToRecord[peer, default: []].append(eventID) }
        if realtimeSeenOrder.count - realtimeSeenHead > options.realtimeDedupMemory {
            realtimeSeen.remove(realtimeSeenOrder[realtimeSeenHead])
            realtimeSeenHead += 1
            if realtimeSeenHead * 2 > realtimeSeenOrder.count {
                realtimeSeenOrder.removeFirst(realtimeSeenHead)
                realtimeSeenHead = 0
            }
        }
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
                for (peer, ids) in batch { _ = try store.recordSeen(from: peer, eventIDs: ids) }
            }
        } catch {
            noteStoreError(error, "could not remember delivered realtime event ids")
        }
    }

    // MARK: - Reliable batches

    func consumeInboxWork() async {
        for await (peer, items) in inboxWork {
            await storeBatch(items, from: peer)
        }
    }

    /// Stores a batch in the inbox (one transaction), acks it, then hands the new items to apps.
    func storeBatch(_ items: [(sequence: UInt64, item: DeliveryItem)], from peer: DeviceID) async {
        guard let lastSequence = items.last?.sequence else { return }
        var fresh: [InboxItem] = []
        for (sequence, item) in items {
            if realtimeSeen.contains(item.eventID) {
                counters.inboxDuplicates &+= 1
            } else {
                fresh.append(item.inboxItem(senderSequence: sequence))
            }
        }
        let store = self.store, key = key(peer), at = wallNow(), toStore = fresh
        let receipts: [InboxReceipt]
        do {
            receipts = try await worker.run { try store.receiveInbox(from: key, items: toStore, at: at) }
        } catch {
            counters.inboxRefused &+= UInt64(fresh.count)
            logger.warning("inbox refused a reliable batch; the sender will retry", metadata: ["error": "\(error)"])
            return
        }
        await transmit(.reliableAck(upTo: lastSequence), to: peer, path: .stream)
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
            await hand(stored.filter { $0.item.featureID == feature }, to: sinks(for: feature))
        }
    }
}
