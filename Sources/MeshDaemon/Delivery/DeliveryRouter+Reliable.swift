import Foundation
import MeshCrypto
import MeshCore

/// The reliable path: outbox → stream batches → peer inbox → cumulative ack → outbox delete.
extension DeliveryRouter {
    /// Sends unacknowledged outbox items to `peer` in sequence order, within the window, as
    /// its `ReliableOutbox` decides. One pump per peer runs at a time; a call while one runs
    /// makes it loop once more.
    func pump(_ peer: DeviceID) async {
        guard peerStates[peer]?.active == true, peerStates[peer]?.outbox.beginPump() == true else { return }
        defer { peerStates[peer]?.outbox.endPump() }
        let rows = outboxRows, key = key(peer)
        for _ in 0..<1_000_000 {
            guard peerStates[peer]?.active == true,
                  let read = peerStates[peer]?.outbox.nextRead(window: options.reliableWindow) else { return }
            let page: (entries: [OutboxEntry], repaired: [Int64])
            do {
                page = try await rows.pending(peer: key, after: read.after, limit: read.limit)
            } catch {
                noteStoreError(error, "could not read the outbox")
                return
            }
            let (entries, repaired) = page
            if !repaired.isEmpty {
                counters.outboxRepairedIDs &+= UInt64(repaired.count)
                logger.warning("outbox items with an event or session id damaged in the state file: given a new event id and sent",
                               metadata: ["peer": "\(peer)", "outboxIDs": "\(repaired.prefix(20).map(String.init).joined(separator: ","))"])
            }
            guard peerStates[peer]?.active == true,
                  let step = peerStates[peer]?.outbox.read(entries, for: read, connection: streamConnection(of: peer), now: now())
            else { return }
            guard case .send(let connection, let resendAfter) = step else {
                if step == .readAgain { continue }
                return
            }
            if let resendAfter {
                guard await transmit(.reliableResend(after: resendAfter), to: peer, path: .stream,
                                     connection: connection) else { return }
            }
            for batch in ReliableOutbox.batches(entries, maximumBytes: options.maximumBatchBytes) {
                guard await transmit(.reliableBatch(batch), to: peer, path: .stream, connection: connection) else { return }
                counters.reliableBatchesSent &+= 1
                counters.reliableItemsSent &+= UInt64(batch.count)
                // TEST ONLY (`testBugDeleteOutboxAtSend`): the historical bug the simulator must
                // catch — the items leave the outbox when sent, before the peer acked them.
                if options.testBugDeleteOutboxAtSend, let last = batch.last?.sequence { deleteAcknowledged(upTo: last, of: peer) }
            }
        }
    }

    /// The node's connection for `peer` now (the node shares this loop: read without a hop).
    func streamConnection(of peer: DeviceID) -> UInt64? {
        channels.streamConnection(of: peer)
    }

    /// Starts a pump for `peer` unless one runs (it then loops once more) or is about to start.
    func schedulePump(_ peer: DeviceID) {
        guard peerStates[peer]?.active == true, peerStates[peer]?.outbox.wantPump() == true else { return }
        spawn { router in
            router.peerStates[peer]?.outbox.scheduledPumpStarts()
            await router.pump(peer)
        }
    }

    /// The peer had refused a batch and has room again: start over from the last ack now (see
    /// `ReliableOutbox.roomNotice`).
    func reliableRoom(from peer: DeviceID) {
        guard peerStates[peer]?.active == true,
              peerStates[peer]?.outbox.roomNotice(now: now(), retryInitial: options.retryInitial) == .restarted else { return }
        counters.reliableRoomResends &+= 1
        schedulePump(peer)
    }

    /// From the tick: resends from the last ack when the peer has not acknowledged within the
    /// retry delay (see `ReliableOutbox.retryIfStalled`).
    func retryIfStalled(_ peer: DeviceID) {
        guard peerStates[peer]?.active == true, peerStates[peer]?.outbox.retryIfStalled(
            now: now(), retryMaximum: options.retryMaximum, using: &random) == true else { return }
        counters.reliableRetries &+= 1
        schedulePump(peer)
    }

    /// Tells the peers whose batch this daemon refused that there is room again (an app's ack
    /// deleted inbox items), once per refusal, so they resend at once.
    func announceRoom() async {
        let waiting = peerStates.filter { $0.value.awaitingResend && !$0.value.roomAnnounced }.keys.sorted()
        for peer in waiting {
            peerStates[peer]?.roomAnnounced = true
            counters.inboxRoomAnnounced &+= 1
            await transmit(.reliableRoom, to: peer, path: .stream)
        }
    }

    /// Acks a received reliable batch without waiting for the write: a peer that does not read
    /// its connection must not hold up the inbox pipeline of every peer. When the connection
    /// does not drain (over NIO's high-water mark), the ack is skipped and counted; the
    /// sender's resend gets a later, cumulative one.
    func sendReliableAck(upTo: UInt64, to peer: DeviceID) {
        let bytes = DeliveryMessage.reliableAck(upTo: upTo).encode()
        let sent = channels.sendStreamIfDraining(bytes, to: peer)
        if !sent { counters.reliableAcksSkipped &+= 1 }
    }

    /// The peer stored everything up to `upTo` durably: forget it here and send more. An ack
    /// above the highest sequence sent to the peer in this run is refused and counted
    /// (`delivery.reliable.acks_refused`; see `ReliableOutbox.acked`). (An ack in flight across
    /// a restart of this daemon is refused too; the items stay queued and the peer acks them
    /// again after the resend.)
    func reliableAcked(upTo: UInt64, from peer: DeviceID) {
        switch peerStates[peer]?.outbox.acked(upTo: upTo, now: now(), retryInitial: options.retryInitial) {
        case .refused?:
            counters.reliableAcksRefused &+= 1
            warnPeerFault("refused a reliable ack for items never sent to the peer", peer: peer)
        case .delete(let newlyAcked)?:
            counters.reliableAcked &+= newlyAcked
            deleteAcknowledged(upTo: upTo, of: peer)
        case .stale?, nil:
            return
        }
    }

    /// Deletes the peer's outbox items up to `upTo`, one delete at a time per peer: acks that
    /// arrive while one runs are merged into the next (`ReliableOutbox.deleteWanted`). Under
    /// load a peer acks every batch it stores, and one commit per ack cost more than the
    /// deletes in it. The delete goes into the group committer's next transaction, so it shares
    /// an fsync with the sends committed then (after the committer's shutdown: on its own).
    func deleteAcknowledged(upTo: UInt64, of peer: DeviceID) {
        guard peerStates[peer]?.outbox.deleteWanted(upTo: upTo) == true else { return }
        let key = key(peer)
        spawn { router in
            var target: UInt64? = upTo
            while let upTo = target {
                do {
                    try await router.outboxRows.acknowledge(peer: key, upTo: upTo)
                    router.counters.reliableAckCommits &+= 1
                    await router.checkDeliveryWaits(on: peer)
                } catch {
                    router.noteStoreError(error, "could not delete acknowledged outbox items")
                }
                router.schedulePump(peer)
                target = router.peerStates[peer]?.outbox.deleteFinished()
            }
        }
    }

    /// The outbox rows in the store (`OutboxRows`).
    var outboxRows: OutboxRows { OutboxRows(store: store, worker: worker, committer: committer) }

    /// Outstanding transfers for `meshctl queue`, with attempts of this run added.
    public func queue() async throws -> [(summary: OutboxSummary, attempts: Int, ageSeconds: Double)] {
        let items = try await outboxRows.list()
        return OutboxRows.listing(items, now: wallNow()) { key, sequence in
            peersByKey[key].flatMap { peerStates[$0]?.outbox.attempts[sequence] } ?? 0
        }
    }

    /// Cancels one outstanding transfer; throws `not-found` when no such item is queued, or
    /// when `permits` is given and does not accept the item's feature.
    public func cancelQueued(id: Int64, permitting permits: (@Sendable (String) -> Bool)? = nil) async throws {
        try await outboxRows.cancel(id: id, permitting: permits)
    }
}
