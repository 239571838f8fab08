import Foundation
import MeshCrypto
import MeshCore
import SessionMesh

/// Channel events: activation drains the pending buffer and resends what peers need.
extension DeliveryRouter {
    func activated(_ peer: DeviceID) async {
        ensurePeer(peer)
        guard var state = peerStates[peer] else { return }
        state.active = true
        state.everActivated = true
        state.outbox.restart(now: now(), retryInitial: options.retryInitial)
        // Ack delays were measured on the channel that went down (perhaps another path).
        state.forgetAckDelays()
        let drained = state.pending.drain()
        peerStates[peer] = state
        counters.pendingDrained &+= UInt64(drained.count)
        emitToAll(.reachability(peer: peer.description, featureID: nil, reachable: true, reason: .channelActive))
        await refreshEstimate(peer)
        await transmit(.presence(features: announcedFeatures), to: peer, path: .stream)
        // Pre-activation items, in arrival order, on the ordered stream path.
        for item in drained {
            switch item {
            case .envelope(let envelope): await sendRealtimeOnStream(envelope, to: peer)
            case .snapshot(let message):
                if await transmitRaw(message, to: peer) { counters.snapshotsPushed &+= 1 }
            }
        }
        await resendState(to: peer)
        await pump(peer)
    }

    func deactivated(_ peer: DeviceID) {
        guard var state = peerStates[peer] else { return }
        state.active = false
        state.remoteFeatures = []
        state.presenceExpiresAt = 0
        peerStates[peer] = state
        updateReachability(peer, gained: .channelActive, lost: .channelDown)
        emitToAll(.reachability(peer: peer.description, featureID: nil, reachable: false, reason: .channelDown))
        // This peer's realtime copies still waiting for its ack go to its outbox now (other
        // peers' copies of the same items keep waiting for their own acks).
        for waiting in realtime.stopWaiting(for: peer) {
            fallBack(waiting.item, to: peer)
        }
    }

    func unpaired(_ peer: DeviceID) async {
        peerStates[peer] = nil
        _ = realtime.stopWaiting(for: peer)
        let store = self.store, key = peer.description
        do {
            let summary = try await worker.run { try store.peers.drop(key) }
            logger.info("delivery data of unpaired device dropped",
                        metadata: ["peer.id": "\(peer.short)", "outbox": "\(summary.outboxItems)", "inbox": "\(summary.inboxItems)"])
        } catch {
            counters.storeErrors &+= 1
            logger.error("could not drop the delivery data of an unpaired device", metadata: ["error": "\(error)"])
        }
    }

    /// Outbound slots, local sessions, anchors and watermarks: what a peer gets on every activation.
    func resendState(to peer: DeviceID) async {
        let store = self.store
        guard let (slots, sessions, anchors) = try? await worker.run({
            (try store.slots.listOutbound(), try store.sessions.list(), try store.sessions.listTimerAnchors())
        }) else {
            counters.storeErrors &+= 1
            return
        }
        for session in sessions where session.sourcePeer == nil {
            await transmit(.session(DeliverySessionRecord(session)), to: peer, path: .stream)
        }
        for slot in slots where await transmit(.snapshotPush(slot.bytes), to: peer, path: .stream) {
            counters.snapshotsPushed &+= 1
        }
        for stored in anchors {
            if let record = try? DeliveryAnchorRecord(stored: stored.bytes) {
                await transmit(.anchor(record), to: peer, path: .stream)
            }
        }
        for (sessionID, mark) in peerStates[peer]?.watermarksSent ?? [:] {
            await transmit(.watermark(sessionID: sessionID, featureID: mark.featureID, sequence: mark.sequence),
                           to: peer, path: .stream)
        }
    }

    /// Sends already-encoded delivery message bytes on the stream.
    func transmitRaw(_ bytes: [UInt8], to peer: DeviceID) async -> Bool {
        do {
            try await send(bytes, to: peer, path: .stream)
            return true
        } catch {
            return false
        }
    }

    func refreshEstimate(_ peer: DeviceID) async {
        let estimate = channels.linkEstimate(of: peer)
        peerStates[peer]?.roundTripNanoseconds = estimate.roundTripNanoseconds
        peerStates[peer]?.offsetNanoseconds = estimate.offsetNanoseconds
    }

    /// Every 100 ms: estimates, presence renewal, lease expiry, reliable retries, seen-set flush.
    /// The wait between ticks is a task scheduled on the loop (virtual time in the simulator).
    func runTicks() async {
        var round: UInt64 = 0
        while !inbound.stopping {
            await withCheckedContinuation { continuation in
                tickWaiter = continuation
                let router = self
                tickTimer = loop.scheduleTask(in: .milliseconds(100)) { router.onLoop { $0.tickTimerFired() } }
            }
            guard !inbound.stopping else { return }
            round &+= 1
            await tick(round: round)
        }
    }

    func tickTimerFired() {
        tickTimer = nil
        tickWaiter?.resume()
        tickWaiter = nil
    }

    /// The router stops: the tick loop ends now instead of after its wait.
    func stopTicks() {
        tickTimer?.cancel()
        tickTimerFired()
    }

    func tick(round: UInt64) async {
        let renewEvery = UInt64(max(1, (options.presenceLease / 3) * 10))
        for peer in peerStates.keys.sorted() where peerStates[peer]?.active == true {
            await refreshEstimate(peer)
            if round % renewEvery == 0 {
                await transmit(.presence(features: announcedFeatures), to: peer, path: .datagram)
            }
            updateReachability(peer, gained: .appAttached, lost: .leaseExpired)
            if peerStates[peer]?.outbox.roomResendPending == true { reliableRoom(from: peer) }
            retryIfStalled(peer)
        }
        retryHandOuts()
        summariseHeldWarnings()
        await flushSeen()
        if idleMemory.tick(fingerprint: counters.traffic) {
            let store = self.store
            _ = try? await worker.run { store.releaseMemory() }
        }
    }
}
