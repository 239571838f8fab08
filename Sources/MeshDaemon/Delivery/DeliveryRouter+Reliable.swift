import Foundation
import MeshCrypto
import MeshCore

/// The reliable path: outbox → stream batches → peer inbox → cumulative ack → outbox delete.
extension DeliveryRouter {
    /// Sends unacknowledged outbox items to `peer` in sequence order, within the window.
    /// One pump per peer runs at a time; a call while one runs makes it loop once more.
    func pump(_ peer: DeviceID) async {
        guard let initial = peerStates[peer], initial.active else { return }
        if initial.pumping {
            peerStates[peer]?.pumpAgain = true
            return
        }
        peerStates[peer]?.pumping = true
        defer { peerStates[peer]?.pumping = false }
        let store = self.store, key = key(peer)
        for _ in 0..<1_000_000 {
            guard let state = peerStates[peer], state.active else { return }
            peerStates[peer]?.pumpAgain = false
            let inFlight = state.lastSent > state.lastAcked ? Int(state.lastSent - state.lastAcked) : 0
            let room = options.reliableWindow - inFlight
            guard room > 0 else { return }
            let after = state.lastSent, epoch = state.epoch
            let entries: [OutboxEntry]
            do {
                entries = try await worker.run { try store.pendingOutbox(peer: key, after: after, limit: min(room, 1024)) }
            } catch {
                noteStoreError(error, "could not read the outbox")
                return
            }
            let repaired = entries.filter(\.repairedID).map(\.id.rawValue)
            if !repaired.isEmpty {
                counters.outboxRepairedIDs &+= UInt64(repaired.count)
                logger.warning("outbox items with an event or session id damaged in the state file: given a new event id and sent",
                               metadata: ["peer": "\(peer)", "outboxIDs": "\(repaired.prefix(20).map(String.init).joined(separator: ","))"])
            }
            guard let current = peerStates[peer], current.active, current.epoch == epoch, current.lastSent == after else {
                continue
            }
            guard let last = entries.last else {
                if peerStates[peer]?.pumpAgain == true { continue }
                return
            }
            // The node can move the peer to a new connection (a reconnect) before this router has
            // consumed the activation: items sent since the last ack then went on the old one and
            // may be lost, and sending the next ones on the new connection would let them overtake
            // those (the receiver stores in arrival order). So the items after the last ack all
            // go on one connection; on another, resend from the last ack.
            guard let connection = streamConnection(of: peer) else { return }
            if current.lastSent > current.lastAcked, let previous = current.sentOnConnection, previous != connection {
                peerStates[peer]?.resendFromLastAck()
                continue
            }
            peerStates[peer]?.sentOnConnection = connection
            if current.lastSent <= current.lastAcked { peerStates[peer]?.lastProgressAt = now() }
            peerStates[peer]?.lastSent = last.sequence
            if last.sequence > current.highestSent { peerStates[peer]?.highestSent = last.sequence }
            peerStates[peer]?.countAttempts(of: entries)
            if current.announceResend {
                // Before the first batch of a new start: a receiver that refused a batch stores
                // again from here (what it refused comes again, or was cancelled).
                peerStates[peer]?.announceResend = false
                guard await transmit(.reliableResend(after: current.lastAcked), to: peer, path: .stream,
                                     connection: connection) else { return }
            }
            for batch in batches(entries) {
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
        guard let state = peerStates[peer], state.active else { return }
        if state.pumping {
            peerStates[peer]?.pumpAgain = true
            return
        }
        guard !state.pumpScheduled else { return }
        peerStates[peer]?.pumpScheduled = true
        Task {
            self.peerStates[peer]?.pumpScheduled = false
            await self.pump(peer)
        }
    }

    /// Splits entries into batch messages of at most `maximumBatchBytes` payload each.
    func batches(_ entries: [OutboxEntry]) -> [[(sequence: UInt64, item: DeliveryItem)]] {
        var result: [[(sequence: UInt64, item: DeliveryItem)]] = []
        var current: [(sequence: UInt64, item: DeliveryItem)] = []
        var bytes = 0
        for entry in entries {
            let size = entry.item.payload.count + 64
            if !current.isEmpty && bytes + size > options.maximumBatchBytes {
                result.append(current)
                current = []
                bytes = 0
            }
            current.append((entry.sequence, DeliveryItem(entry)))
            bytes += size
        }
        if !current.isEmpty { result.append(current) }
        return result
    }

    /// The peer had refused a batch and has room again: start over from the last ack now, not
    /// at the retry delay (which may have grown to 30 s meanwhile). At most one such restart
    /// per 100 ms, whatever the peer sends: a notice within that time is kept for the next tick.
    func reliableRoom(from peer: DeviceID) {
        guard var state = peerStates[peer], state.active, state.lastSent > state.lastAcked else { return }
        let now = now()
        if let last = state.lastRoomResendAt, now >= last, now - last < 100_000_000 {
            peerStates[peer]?.roomResendPending = true
            return
        }
        state.roomResendPending = false
        counters.reliableRoomResends &+= 1
        state.resendFromLastAck()
        state.lastRoomResendAt = now
        state.lastProgressAt = now
        state.retryDelay = options.retryInitial
        peerStates[peer] = state
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

    /// The peer stored everything up to `upTo` durably: forget it here and send more.
    ///
    /// An ack above the highest sequence sent to the peer in this run is refused and counted
    /// (`delivery.reliable.acks_refused`): it would delete items the peer never got and, stored
    /// as the stream's position, stop the reliable stream to that peer. (An ack in flight across
    /// a restart of this daemon is refused too; the items stay queued and the peer acks them
    /// again after the resend.)
    func reliableAcked(upTo: UInt64, from peer: DeviceID) {
        guard var state = peerStates[peer], upTo > state.lastAcked else { return }
        guard upTo <= state.highestSent else {
            counters.reliableAcksRefused &+= 1
            warnPeerFault("refused a reliable ack for items never sent to the peer", peer: peer)
            return
        }
        counters.reliableAcked &+= upTo - state.lastAcked
        state.lastAcked = upTo
        if state.lastSent < upTo { state.lastSent = upTo }
        state.lastProgressAt = now()
        state.retryDelay = options.retryInitial
        state.attempts = state.attempts.filter { $0.key > upTo }
        peerStates[peer] = state
        deleteAcknowledged(upTo: upTo, of: peer)
    }

    /// Deletes the peer's outbox items up to `upTo`, one delete at a time per peer: acks that
    /// arrive while one runs are merged into the next, which deletes up to the highest of them.
    /// Under load a peer acks every batch it stores, and one commit per ack cost more than the
    /// deletes in it. The delete goes into the group committer's next transaction, so it shares
    /// an fsync with the sends committed then (after the committer's shutdown: on its own).
    func deleteAcknowledged(upTo: UInt64, of peer: DeviceID) {
        if outboxDeletesRunning.contains(peer) {
            outboxDeleteNext[peer] = max(outboxDeleteNext[peer] ?? 0, upTo)
            return
        }
        outboxDeletesRunning.insert(peer)
        let key = key(peer)
        Task {
            var target = upTo
            while true {
                let upTo = target
                do {
                    try await self.acknowledgeOutbox(peer: key, upTo: upTo)
                    self.counters.reliableAckCommits &+= 1
                    await self.checkDeliveryWaits(on: peer)
                } catch {
                    self.noteStoreError(error, "could not delete acknowledged outbox items")
                }
                self.schedulePump(peer)
                guard let next = self.outboxDeleteNext.removeValue(forKey: peer) else { break }
                target = next
            }
            self.outboxDeletesRunning.remove(peer)
        }
    }

    /// Deletes through the group committer; once it is shut down (the router is stopping), on
    /// the store worker.
    private func acknowledgeOutbox(peer key: String, upTo: UInt64) async throws {
        do {
            _ = try await committer.acknowledgeOutbox(peer: key, upTo: upTo)
        } catch let error as StoreError where error.code == .closed {
            let store = self.store
            _ = try await worker.run { try store.acknowledgeOutbox(peer: key, upTo: upTo) }
        }
    }

    /// Outstanding transfers for `meshctl queue`, with attempts of this run added.
    public func queue() async throws -> [(summary: OutboxSummary, attempts: Int, ageSeconds: Double)] {
        let store = self.store
        let items: [OutboxSummary]
        do { items = try await worker.run { try store.listOutbox() } } catch { throw MeshError.store(error) }
        let now = wallNow()
        return items.map { summary in
            let peer = peersByKey[summary.peer]
            let live = peer.flatMap { peerStates[$0]?.attempts[summary.sequence] } ?? 0
            return (summary, summary.attempts + live, summary.age(at: now))
        }
    }

    /// Cancels one outstanding transfer; throws `not-found` when no such item is queued, or
    /// when `permits` is given and does not accept the item's feature.
    public func cancelQueued(id: Int64, permitting permits: (@Sendable (String) -> Bool)? = nil) async throws {
        let store = self.store
        let removed: Bool
        do { removed = try await worker.run { try store.cancelOutbox(id: OutboxID(rawValue: id), permitting: permits) } } catch {
            throw MeshError.store(error)
        }
        guard removed else { throw MeshError.notFound("no queued item has id \(id); see `meshctl queue`") }
    }
}
