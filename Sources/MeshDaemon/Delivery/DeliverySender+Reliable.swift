import Foundation
import MeshCrypto
import MeshCore

/// The reliable path: outbox → stream batches → peer inbox → cumulative ack → outbox delete.
extension DeliverySender {
    /// Sends unacknowledged outbox items to `peer` in sequence order, within the window, as
    /// its `ReliableOutbox` decides. One pump per peer runs at a time; a call while one runs
    /// makes it loop once more.
    func pump(_ router: isolated DeliveryRouter, _ peer: DeviceID) async {
        guard router.peerStates[peer]?.active == true, router.peerStates[peer]?.outbox.beginPump() == true else { return }
        defer { router.peerStates[peer]?.outbox.endPump() }
        let rows = outboxRows, key = router.key(peer)
        for _ in 0..<1_000_000 {
            guard router.peerStates[peer]?.active == true,
                  let read = router.peerStates[peer]?.outbox.nextRead(window: router.options.reliableWindow) else { return }
            let page: (entries: [OutboxEntry], repaired: [Int64])
            do {
                page = try await rows.pending(peer: key, after: read.after, limit: read.limit)
            } catch {
                router.noteStoreError(error, "could not read the outbox")
                return
            }
            let (entries, repaired) = page
            if !repaired.isEmpty {
                router.counters.outboxRepairedIDs &+= UInt64(repaired.count)
                router.logger.warning("outbox items with an event or session id damaged in the state file: given a new event id and sent",
                                      metadata: ["peer": "\(peer)",
                                                 "outboxIDs": "\(repaired.prefix(20).map(String.init).joined(separator: ","))"])
            }
            // The node's connection for `peer` now (the node shares this loop: read without a hop).
            guard router.peerStates[peer]?.active == true,
                  let step = router.peerStates[peer]?.outbox.read(entries, for: read,
                                                                  connection: router.channels.streamConnection(of: peer),
                                                                  now: router.now())
            else { return }
            guard case .send(let connection, let resendAfter) = step else {
                if step == .readAgain { continue }
                return
            }
            if let resendAfter {
                guard await router.transmitWritten(.reliableResend(after: resendAfter), to: peer, connection: connection) else { return }
            }
            for batch in ReliableOutbox.batches(entries, maximumBytes: router.options.maximumBatchBytes) {
                // Awaited: one batch at a time in NIO is the pump's back-pressure.
                guard await router.transmitWritten(.reliableBatch(batch), to: peer, connection: connection) else { return }
                router.counters.reliableBatchesSent &+= 1
                router.counters.reliableItemsSent &+= UInt64(batch.count)
                // TEST ONLY (`testBugDeleteOutboxAtSend`): the historical bug the simulator must
                // catch — the items leave the outbox when sent, before the peer acked them.
                if router.options.testBugDeleteOutboxAtSend, let last = batch.last?.sequence {
                    deleteAcknowledged(router, upTo: last, of: peer)
                }
            }
        }
    }

    /// Starts a pump for `peer` unless one runs (it then loops once more) or is about to start.
    func schedulePump(_ router: isolated DeliveryRouter, _ peer: DeviceID) {
        guard router.peerStates[peer]?.active == true, router.peerStates[peer]?.outbox.wantPump() == true else { return }
        router.spawn { router in
            router.peerStates[peer]?.outbox.scheduledPumpStarts()
            await router.sender.pump(router, peer)
        }
    }

    /// The peer had refused a batch and has room again: start over from the last ack now (see
    /// `ReliableOutbox.roomNotice`).
    func reliableRoom(_ router: isolated DeliveryRouter, from peer: DeviceID) {
        guard router.peerStates[peer]?.active == true,
              router.peerStates[peer]?.outbox.roomNotice(now: router.now(), retryInitial: router.options.retryInitial) == .restarted
        else { return }
        router.counters.reliableRoomResends &+= 1
        schedulePump(router, peer)
    }

    /// From the tick: resends from the last ack when the peer has not acknowledged within the
    /// retry delay (see `ReliableOutbox.retryIfStalled`).
    func retryIfStalled(_ router: isolated DeliveryRouter, _ peer: DeviceID) {
        guard router.peerStates[peer]?.active == true, router.peerStates[peer]?.outbox.retryIfStalled(
            now: router.now(), retryMaximum: router.options.retryMaximum, using: &router.random) == true else { return }
        router.counters.reliableRetries &+= 1
        schedulePump(router, peer)
    }

    /// Tells the peers whose batch this daemon refused that there is room again (an app's ack
    /// deleted inbox items), once per refusal, so they resend at once.
    func announceRoom(_ router: isolated DeliveryRouter) async {
        let waiting = router.peerStates.filter { $0.value.awaitingResend && !$0.value.roomAnnounced }.keys.sorted()
        for peer in waiting {
            router.peerStates[peer]?.roomAnnounced = true
            router.counters.inboxRoomAnnounced &+= 1
            router.transmit(.reliableRoom, to: peer, path: .stream)
        }
    }

    /// Acks a received reliable batch without waiting for the write: a peer that does not read
    /// its connection must not hold up the inbox pipeline of every peer. When the connection
    /// does not drain (over NIO's high-water mark), the ack is skipped and counted; the
    /// sender's resend gets a later, cumulative one.
    func sendReliableAck(_ router: isolated DeliveryRouter, upTo: UInt64, to peer: DeviceID) {
        let bytes = DeliveryMessage.reliableAck(upTo: upTo).encode()
        let sent = router.channels.sendStreamIfDraining(bytes, to: peer)
        if !sent { router.counters.reliableAcksSkipped &+= 1 }
    }

    /// The peer stored everything up to `upTo` durably: forget it here and send more. An ack
    /// above the highest sequence sent to the peer in this run is refused and counted
    /// (`delivery.reliable.acks_refused`; see `ReliableOutbox.acked`). (An ack in flight across
    /// a restart of this daemon is refused too; the items stay queued and the peer acks them
    /// again after the resend.)
    func reliableAcked(_ router: isolated DeliveryRouter, upTo: UInt64, from peer: DeviceID) {
        switch router.peerStates[peer]?.outbox.acked(upTo: upTo, now: router.now(), retryInitial: router.options.retryInitial) {
        case .refused?:
            router.counters.reliableAcksRefused &+= 1
            router.warnPeerFault("refused a reliable ack for items never sent to the peer", peer: peer)
        case .delete(let newlyAcked)?:
            router.counters.reliableAcked &+= newlyAcked
            deleteAcknowledged(router, upTo: upTo, of: peer)
        case .stale?, nil:
            return
        }
    }

    /// Deletes the peer's outbox items up to `upTo`, one delete at a time per peer: acks that
    /// arrive while one runs are merged into the next (`ReliableOutbox.deleteWanted`). Under
    /// load a peer acks every batch it stores, and one commit per ack cost more than the
    /// deletes in it. The delete goes into the group committer's next transaction, so it shares
    /// an fsync with the sends committed then (after the committer's shutdown: on its own).
    func deleteAcknowledged(_ router: isolated DeliveryRouter, upTo: UInt64, of peer: DeviceID) {
        guard router.peerStates[peer]?.outbox.deleteWanted(upTo: upTo) == true else { return }
        let key = router.key(peer)
        router.spawn { router in
            var target: UInt64? = upTo
            while let upTo = target {
                do {
                    try await router.sender.outboxRows.acknowledge(peer: key, upTo: upTo)
                    router.counters.reliableAckCommits &+= 1
                    await router.directory.checkDeliveryWaits(router, on: peer)
                } catch {
                    router.noteStoreError(error, "could not delete acknowledged outbox items")
                }
                router.sender.schedulePump(router, peer)
                target = router.peerStates[peer]?.outbox.deleteFinished()
            }
        }
    }

    /// `DeliveryRouter.queue()`: the outbox listing with this run's attempts added.
    func queue(_ router: isolated DeliveryRouter) async throws -> [(summary: OutboxSummary, attempts: Int, ageSeconds: Double)] {
        let items = try await outboxRows.list()
        return OutboxRows.listing(items, now: router.wallNow()) { key, sequence in
            router.peersByKey[key].flatMap { router.peerStates[$0]?.outbox.attempts[sequence] } ?? 0
        }
    }
}
