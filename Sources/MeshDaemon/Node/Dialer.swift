import MeshCrypto
import MeshCore
import NIOCore

/// How one outgoing attempt ended.
enum DialResult: Sendable {
    /// The channel was active and its connection has since closed (a redial is scheduled).
    case ranAndClosed
    /// Could not connect or the handshake failed; try the next address.
    case failed
    /// No longer needed (another channel is active, the peer is gone, or the node stops).
    case notNeeded
}

/// Outgoing channels: schedules dials to paired devices (at once, or after their backoff, as
/// `DialState` decides), runs them as jobs of the node's run loop, and plays the initiator's
/// side of the channel handshake; `PeerChannels` decides, the dialer does the I/O.
///
/// Owns the backoff timers; runs on the node's executor (every method that needs the node
/// takes it `isolated`). The connection drivers (`perform`, `dial`, `probe`) are static and
/// nonisolated: they run as tasks of the node and enter it for each step (`MeshNode.hop`).
final class Dialer {
    /// Dial jobs waiting out their backoff, by peer.
    var dialTimers: [DeviceID: Scheduled<Void>] = [:]

    /// Schedules one dial job for `peer` unless one is already pending: now, or once its
    /// backoff has passed (a timer on the node's loop).
    func scheduleDial(_ node: isolated MeshNode, _ peer: DeviceID, immediately: Bool) {
        guard node.phase == .running, let backoff = node.channels.scheduleDial(peer, immediately: immediately) else { return }
        // On the relay, path choice may hold the channel there a while longer.
        let delay = max(backoff, node.channels.peers[peer]?.path.directDialDelay(now: node.clock.monotonicNanoseconds()) ?? 0)
        guard delay > 0 else {
            node.jobQueue.yield(.dial(peer: peer))
            return
        }
        let queue = node.jobQueue
        dialTimers[peer]?.cancel()
        dialTimers[peer] = node.loop.scheduleTask(in: .nanoseconds(Int64(clamping: delay))) { queue.yield(.dial(peer: peer)) }
    }

    /// Tries `peer` now instead of after its backoff (a new address, a link that came back).
    /// While an attempt runs, its backoff is reset so a retry follows quickly, and mDNS
    /// addresses that attempt is not trying are dialled next to it (it may be stuck for
    /// seconds on a stale address that does not answer).
    func kickDial(_ node: isolated MeshNode, _ peer: DeviceID) {
        guard node.phase == .running, let slot = node.channels.peers.index(forKey: peer) else { return }
        let held = node.channels.peers.values[slot].path.directDialDelay(now: node.clock.monotonicNanoseconds()) > 0
        switch node.channels.peers.values[slot].dial.kick(channelActive: node.channels.peers.values[slot].channelOnDirectPath) {
        case .none:
            return
        case .dialBesideAttempt:
            let fresh = node.finder.tracker.addressesBesideDial(of: peer)
            if !fresh.isEmpty { node.jobQueue.yield(.dialAddresses(peer: peer, addresses: fresh)) }
        case .dialNow:
            dialTimers.removeValue(forKey: peer)?.cancel()
            if held {
                // The kick marked a job scheduled: it runs once the hold has passed.
                node.channels.peers.values[slot].dial.abandonScheduled()
                scheduleDial(node, peer, immediately: true)
            } else {
                node.jobQueue.yield(.dial(peer: peer))
            }
        }
    }

    /// `peer` seems to hold another channel than ours (see `PeerChannels.replacingHandshakeDue`;
    /// its handshake ran on connection `connectionID`): handshake with it now, next to our
    /// channel, instead of waiting for a lease to run out. The side that keeps its channel in
    /// a simultaneous connect starts this too, so its own connection, which wins on both
    /// sides, replaces the stale pair.
    func replaceChannel(_ node: isolated MeshNode, _ peer: DeviceID, besides connectionID: UInt64) {
        guard node.phase == .running, let runtime = node.channels.peers[peer],
              node.channels.replacingHandshakeDue(peer, besides: connectionID, now: node.clock.monotonicNanoseconds())
        else { return }
        let addresses = node.finder.dialCandidates(node, runtime)
        guard !addresses.isEmpty else { return }
        node.counters.replacingHandshakes += 1
        node.logger.debug("the peer seems to hold another channel; handshaking again next to ours",
                          metadata: ["peer.id": "\(peer.short)"])
        node.jobQueue.yield(.replaceChannel(peer: peer, addresses: addresses))
    }

    /// The node stops: no backoff timer fires any more.
    func stop() {
        for timer in dialTimers.values { timer.cancel() }
        dialTimers.removeAll()
    }

    /// The addresses to try now and the attempt's number, or nil when no dial is needed.
    func beginDial(_ node: isolated MeshNode, _ peer: DeviceID) -> ([PathAddress], UInt64)? {
        dialTimers.removeValue(forKey: peer)
        guard node.phase == .running, let runtime = node.channels.dialDue(peer) else { return nil }
        if runtime.path.directDialDelay(now: node.clock.monotonicNanoseconds()) > 0 {
            // Held on the relay: the same round, once the hold has passed.
            scheduleDial(node, peer, immediately: true)
            return nil
        }
        // Direct addresses only: path choice dials the relay next to them (`dialRelayIfDue`).
        let addresses = node.finder.dialCandidates(node, runtime).map(PathAddress.host)
        // Nothing to dial: the peer will connect to us.
        guard !addresses.isEmpty, let generation = node.channels.peers[peer]?.dial.startAttempt() else { return nil }
        return (addresses, generation)
    }

    /// The timer pass for `peer`: dials the relay when path choice says so (no channel for
    /// `PathChoice.relayDelay` and the broker connection up).
    func dialRelayIfDue(_ node: isolated MeshNode, _ peer: DeviceID, now: UInt64) {
        guard node.phase == .running, let slot = node.channels.peers.index(forKey: peer) else { return }
        let available = node.channels.peers.values[slot].channel == nil && node.relayRoute(to: peer) != nil
        guard node.channels.peers.values[slot].path.tick(now: now, relayAvailable: available) == .dialRelay else { return }
        node.logger.debug("no channel on a direct path; dialling the relay", metadata: ["peer.id": "\(peer.short)"])
        node.jobQueue.yield(.dialRelay(peer: peer))
    }

    /// A relay dial ended with `result`: one that did not bring a channel up lets path choice
    /// try again (after a longer wait when it failed).
    func relayDialEnded(_ node: isolated MeshNode, _ peer: DeviceID, result: DialResult) {
        let failed: Bool
        switch result {
        case .ranAndClosed: return
        case .failed: failed = true
        case .notNeeded: failed = false
        }
        node.channels.peers[peer]?.path.relayDialEnded(now: node.clock.monotonicNanoseconds(), failed: failed)
    }

    /// A dial job ended; when every address failed, back off and try again later.
    func dialEnded(_ node: isolated MeshNode, _ peer: DeviceID, generation: UInt64, failed: Bool) {
        guard node.channels.peers[peer]?.dial.attemptEnded(generation: generation, failed: failed) == true,
              !node.tuning.testBugDialNotRetried else { return }
        scheduleDial(node, peer, immediately: false)
    }

    /// Builds message 1 (framed) for `peer` and registers the connection with its handshake
    /// deadline; nil when the dial is no longer needed (a channel is active, unless
    /// `replacingLiveChannel`).
    func startHandshake(_ node: isolated MeshNode, _ peer: DeviceID, path: any ChannelPath,
                        replacingLiveChannel: Bool = false) -> ([UInt8], PendingInitiator)? {
        guard node.phase == .running,
              let (message1, started) = node.channels.startHandshake(peer, replacingLiveChannel: replacingLiveChannel,
                                                                     kind: path.remote.isRelay ? .relay : .direct,
                                                                     udpPort: node.announcedUDPPort,
                                                                     wall: node.clock.wallNanoseconds(),
                                                                     now: node.clock.monotonicNanoseconds()) else {
            return nil
        }
        var pending = started
        pending.connectionID = node.gate.register(path)
        node.gate.armDeadline(node, path, seconds: node.tuning.handshakeTimeout, connection: pending.connectionID)
        return (message1, pending)
    }

    /// The responder closed, answered garbage, or lost a simultaneous connect: clean up.
    func handshakeFailed(_ node: isolated MeshNode, _ pending: PendingInitiator, countFailure: Bool) {
        if countFailure { node.counters.handshakesFailed += 1 }
        node.gate.ended(pending.connectionID)
        node.channels.initiatorEnded(pending)
    }

    /// Reads message 2, confirms and activates. `.ranAndClosed` here means "now active".
    func finishHandshake(_ node: isolated MeshNode, _ pending: PendingInitiator, message2: [UInt8],
                         path: any ChannelPath) -> DialResult {
        guard node.phase == .running else { return .notNeeded }
        switch node.channels.finishHandshake(pending, message2: message2, kind: path.remote.isRelay ? .relay : .direct,
                                             now: node.clock.monotonicNanoseconds()) {
        case .gone: return .notNeeded
        case .failed: return .failed
        case .lostSimultaneousConnect:
            node.counters.simultaneousConnectsResolved += 1
            return .notNeeded
        case .established(let active, let confirm, let udpPort):
            path.send(ByteBuffer(bytes: confirm), promise: nil)
            node.gate.authenticated(pending.connectionID)
            // Message 2's X25519 counts: the figure ends after `finishHandshake`.
            node.counters.lastHandshakeMicroseconds = (node.clock.monotonicNanoseconds() &- pending.startedAt) / 1000
            node.activate(pending.peer, channel: active,
                          connection: ChannelConnection(id: pending.connectionID, path: path, locallyInitiated: true),
                          datagramEndpoint: path.remote.datagramEndpoint(announcedPort: udpPort))
            return .ranAndClosed
        }
    }
}
