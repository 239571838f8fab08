import Foundation
import Logging
import MeshCore
import MeshCrypto

/// Store and forward through the relay broker, on the router's side (docs/RELAY.md, "Store and
/// forward"; the box formats in docs/PROTOCOL.md §11):
///
/// - **Sending**: while a peer has no live channel and the mailbox can post, its outbox items
///   go out as item boxes (the plaintext is a reliable batch, §9 type `0x03`), as
///   ``MailboxPostState`` decides. They stay in the outbox until an ack says the peer stored them.
/// - **Receiving items**: stored in the inbox with the usual event-ID dedup and inbox limits,
///   then acked with an ack box naming their event IDs, then handed to the apps — the same
///   order as on the channel (store, ack, hand out). An item received by both the mailbox and
///   the channel is stored, and handed to apps, once.
/// - **Receiving acks**: exactly the named outbox items are deleted.
/// - **Latest-state slots** (`MailboxCourier+Snapshots.swift`): while the peer has no live
///   channel, each outbound slot's revision the peer has not acknowledged goes out as a snapshot
///   box (``MailboxSnapshotPostState``); a received one goes into the peer's inbound slot (a lower
///   revision never replaces a higher one) and is acked by its ``MailboxSnapshotAckID``.
///
/// Received boxes wait in one bounded queue (``maximumQueuedBoxes``, ``maximumQueuedBytes``)
/// and are handled one at a time in arrival order; a box beyond it is dropped and counted (its
/// sender posts the items again). Owns that queue, each peer's `MailboxPostState` and the
/// counters; its methods take the router `isolated` (no hop).
final class MailboxCourier {
    static let maximumQueuedBoxes = 512
    static let maximumQueuedBytes = 16 << 20

    struct Counters: Sendable, Equatable {
        var itemsPosted: UInt64 = 0
        var itemBoxesPosted: UInt64 = 0
        var itemsTooLarge: UInt64 = 0
        var itemsReceived: UInt64 = 0
        var itemsStored: UInt64 = 0
        var duplicates: UInt64 = 0
        var refused: UInt64 = 0
        var inboxRefused: UInt64 = 0
        var acksPosted: UInt64 = 0
        var itemsAcked: UInt64 = 0
        var malformed: UInt64 = 0
        var droppedBusy: UInt64 = 0
        var snapshotsPosted: UInt64 = 0
        var snapshotsTooLarge: UInt64 = 0
        var snapshotsReceived: UInt64 = 0
        var snapshotsStale: UInt64 = 0
        var snapshotsRefused: UInt64 = 0
    }

    private struct Received {
        var peer: DeviceID
        var kind: MailboxSeal.Kind
        var plaintext: [UInt8]
    }

    var counters = Counters()
    private(set) var states: [DeviceID: MailboxPostState] = [:]
    /// Each peer's latest-state slots at the broker (`MailboxCourier+Snapshots.swift`).
    var snapshotStates: [DeviceID: MailboxSnapshotPostState] = [:]
    private var queue: [Received] = []
    private var queueHead = 0
    private var queuedBytes = 0
    private var draining = false
    private var inboxRefusedWarning = RateLimitedWarning()

    // MARK: - Sending

    /// From the tick: a pass for each peer without a live channel whose mailbox can take posts.
    func tick(_ router: isolated DeliveryRouter) {
        guard let mailbox = router.channels.mailbox else { return }
        let now = router.now()
        for peer in router.peerStates.keys.sorted() {
            if router.peerStates[peer]?.active == true {
                states[peer]?.channelActive()
                snapshotStates[peer]?.channelActive()
                continue
            }
            guard let posting = mailbox.postingState(for: peer), posting.settled else { continue }
            if snapshotStates[peer, default: MailboxSnapshotPostState()].beginPass(now: now, epoch: posting.epoch) {
                router.spawn { router in await router.courier.snapshotPass(router, peer, epoch: posting.epoch) }
            }
            guard let read = states[peer, default: MailboxPostState()].beginPass(now: now, epoch: posting.epoch) else { continue }
            router.spawn { router in await router.courier.pass(router, peer, read: read, epoch: posting.epoch) }
        }
    }

    /// Reads the peer's outbox after the round's cursor and posts what the state plans.
    private func pass(_ router: isolated DeliveryRouter, _ peer: DeviceID, read: MailboxPostState.Read, epoch: UInt64) async {
        var readWasFull = false, postFailed = false
        defer { states[peer]?.endPass(now: router.now(), readWasFull: readWasFull, postFailed: postFailed) }
        let entries: [OutboxEntry]
        do {
            entries = try await router.sender.outboxRows.pending(peer: router.key(peer), after: read.after, limit: read.limit).entries
        } catch {
            router.noteStoreError(error, "could not read the outbox for the relay mailbox")
            return
        }
        readWasFull = entries.count >= read.limit
        // The read suspended: a channel may have come up, or the broker connection changed.
        guard router.peerStates[peer]?.active != true, let mailbox = router.channels.mailbox,
              mailbox.postingState(for: peer)?.epoch == epoch, let state = states[peer] else { return }
        for step in state.plan(entries, maximumPlaintext: mailbox.maximumPlaintextBytes) {
            switch step {
            case .tooLarge(let sequence):
                counters.itemsTooLarge &+= 1
                states[peer]?.skipped(sequence)
            case .box(let items, _):
                guard mailbox.post(DeliveryMessage.reliableBatch(items).encode(), kind: .item, to: peer) else {
                    postFailed = true
                    return
                }
                counters.itemBoxesPosted &+= 1
                counters.itemsPosted &+= UInt64(items.count)
                states[peer]?.posted(step)
            }
        }
    }

    // MARK: - Receiving

    /// A box that opened: queued (bounded) for the drain, which handles one at a time.
    func received(_ router: isolated DeliveryRouter, _ plaintext: [UInt8], kind: MailboxSeal.Kind, from peer: DeviceID) {
        guard !router.consumer.inbound.refuses(peer) else { return }
        guard queue.count - queueHead < Self.maximumQueuedBoxes, queuedBytes + plaintext.count <= Self.maximumQueuedBytes else {
            counters.droppedBusy &+= 1
            return
        }
        queue.append(Received(peer: peer, kind: kind, plaintext: plaintext))
        queuedBytes += plaintext.count
        guard !draining else { return }
        draining = true
        router.spawn { router in await router.courier.drain(router) }
    }

    private func drain(_ router: isolated DeliveryRouter) async {
        defer { draining = false }
        while queueHead < queue.count, !router.consumer.inbound.stopping {
            let next = queue[queueHead]
            queueHead += 1
            queuedBytes -= next.plaintext.count
            if queueHead == queue.count {
                queue.removeAll(keepingCapacity: queue.count <= 64)
                queueHead = 0
            }
            guard !router.consumer.inbound.refuses(next.peer) else { continue }
            router.ensurePeer(next.peer)
            switch next.kind {
            case .item: await items(router, next.plaintext, from: next.peer)
            case .ack: await ack(router, next.plaintext, from: next.peer)
            case .snapshot: await snapshot(router, next.plaintext, from: next.peer)
            }
        }
    }

    /// An item box: store what is new, ack what is stored (new or held already), hand out.
    private func items(_ router: isolated DeliveryRouter, _ plaintext: [UInt8], from peer: DeviceID) async {
        guard case .reliableBatch(let batch)? = try? DeliveryMessage(decoding: plaintext), !batch.isEmpty else {
            counters.malformed &+= 1
            router.warnPeerFault("dropped a mailbox item box that is not a reliable batch", peer: peer)
            return
        }
        counters.itemsReceived &+= UInt64(batch.count)
        // An item whose header disagrees with its envelope is refused, as on the channel, and
        // acked: it would be refused at every resend.
        var acked: [UUID] = []
        var valid: [(sequence: UInt64, item: DeliveryItem)] = []
        for entry in batch {
            if entry.item.matchesEnvelope {
                valid.append(entry)
            } else {
                counters.refused &+= 1
                router.counters.itemsRefused &+= 1
                acked.append(entry.item.eventID)
            }
        }
        if !acked.isEmpty { router.warnPeerFault("refused a received item whose header disagrees with its envelope", peer: peer) }
        let store = router.store, key = router.key(peer), at = router.wallNow()
        let toStore = valid.map { $0.item.inboxItem(senderSequence: $0.sequence) }
        var receipts: [InboxReceipt] = []
        if !toStore.isEmpty {
            do {
                receipts = try await router.worker.run { try store.inbox.receive(from: key, items: toStore, at: at, storingWhatFits: true) }
            } catch {
                counters.inboxRefused &+= UInt64(toStore.count)
                if let suppressed = inboxRefusedWarning.admit(now: router.now()) {
                    router.logger.warning("inbox refused items from the relay mailbox; the sender will post them again",
                                          metadata: ["peer.id": "\(peer.short)", "error": "\(error)", "suppressed": "\(suppressed)"])
                }
            }
        }
        counters.inboxRefused &+= UInt64(toStore.count - receipts.count)
        var stored: [InboxEntry] = []
        for (index, receipt) in receipts.enumerated() {
            acked.append(valid[index].item.eventID)
            switch receipt {
            case .stored(let id):
                router.consumer.inbox.rememberStored(valid[index].item.eventID)
                stored.append(InboxEntry(id: id, peer: key, item: toStore[index], receivedAt: at, deliveryCount: 0))
            case .duplicate:
                counters.duplicates &+= 1
            }
        }
        if let mailbox = router.channels.mailbox {
            for ack in MailboxAck.plaintexts(for: acked) where mailbox.post(ack, kind: .ack, to: peer) {
                counters.acksPosted &+= 1
            }
        }
        counters.itemsStored &+= UInt64(stored.count)
        router.counters.inboxStored &+= UInt64(stored.count)
        for feature in Set(stored.map(\.item.featureID)).sorted() {
            await router.handOut.hand(router, stored.filter { $0.item.featureID == feature }, to: router.sinks(for: feature))
        }
    }

    /// An ack box: delete exactly the named outbox items.
    private func ack(_ router: isolated DeliveryRouter, _ plaintext: [UInt8], from peer: DeviceID) async {
        guard let ack = try? MailboxAck(decoding: plaintext) else {
            counters.malformed &+= 1
            router.warnPeerFault("dropped a malformed mailbox ack", peer: peer)
            return
        }
        let store = router.store, key = router.key(peer), eventIDs = ack.eventIDs
        // Some IDs may name snapshots (`MailboxSnapshotAckID`); the outbox finds none of those.
        snapshotStates[peer, default: MailboxSnapshotPostState()].acked(eventIDs)
        do {
            let removed = try await router.worker.run { try store.outbox.acknowledge(peer: key, eventIDs: eventIDs) }
            counters.itemsAcked &+= UInt64(removed)
            router.counters.reliableAcked &+= UInt64(removed)
        } catch {
            router.noteStoreError(error, "could not delete outbox items the relay mailbox acknowledged")
            return
        }
        states[peer]?.acked(eventIDs)
        await router.directory.checkDeliveryWaits(router, on: peer)
    }

    /// The counters for `meshctl status --counters`.
    var counterValues: [String: UInt64] {
        [
            "delivery.mailbox.items_posted": counters.itemsPosted,
            "delivery.mailbox.item_boxes_posted": counters.itemBoxesPosted,
            "delivery.mailbox.items_too_large": counters.itemsTooLarge,
            "delivery.mailbox.items_received": counters.itemsReceived,
            "delivery.mailbox.items_stored": counters.itemsStored,
            "delivery.mailbox.duplicates": counters.duplicates,
            "delivery.mailbox.refused": counters.refused,
            "delivery.mailbox.inbox_refused": counters.inboxRefused,
            "delivery.mailbox.acks_posted": counters.acksPosted,
            "delivery.mailbox.items_acked": counters.itemsAcked,
            "delivery.mailbox.malformed": counters.malformed,
            "delivery.mailbox.dropped_busy": counters.droppedBusy,
            "delivery.mailbox.snapshots_posted": counters.snapshotsPosted,
            "delivery.mailbox.snapshots_too_large": counters.snapshotsTooLarge,
            "delivery.mailbox.snapshots_received": counters.snapshotsReceived,
            "delivery.mailbox.snapshots_stale": counters.snapshotsStale,
            "delivery.mailbox.snapshots_refused": counters.snapshotsRefused,
        ]
    }
}
