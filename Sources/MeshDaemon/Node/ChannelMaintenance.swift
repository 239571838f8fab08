import MeshCrypto
import NIOCore

/// Keeps the active channels alive and fresh: the timer pass on the node's loop (keepalives,
/// reachability leases, key expiry, connections whose peer does not read, the pairing code's
/// expiry) and rekeying
/// (`ChannelMaintenance+Rekey.swift`). `PeerRuntime.timerTick` and `PeerChannels` decide;
/// this writes what they return.
///
/// Owns the timer pass; runs on the node's executor (every method that needs the node takes
/// it `isolated`).
final class ChannelMaintenance {
    /// The timer pass (`start`), cancelled when the node stops.
    var timerTask: RepeatedTask?

    /// Ticks keepalives, leases, rekeys and the pairing code's expiry on the node's loop
    /// until the node stops (`stop` cancels it).
    func start(_ node: isolated MeshNode) {
        timerTask = LoopTicker.start(on: node.loop, every: LoopTicker.timerPassInterval(keepalive: node.configuration.keepaliveInterval)) {
            [weak node] in
            guard let node else { return false }
            return node.onLoop { $0.maintenance.tick($0) }
        }
    }

    /// The node stops: no more timer passes.
    func stop() { timerTask?.cancel() }

    /// One timer pass over every active channel; false once the node stops.
    func tick(_ node: isolated MeshNode) -> Bool {
        guard node.phase == .running else { return false }
        let now = node.clock.monotonicNanoseconds()
        let keepalive = Nanoseconds.from(seconds: max(node.configuration.keepaliveInterval, 0.01))
        // In device ID order, not the dictionary's (which changes per process): a seed replays.
        for peer in node.channels.peers.keys.sorted() {
            node.dialer.dialRelayIfDue(node, peer, now: now)
            guard let actions = node.channels.peers[peer]?.timerTick(now: now, keepaliveInterval: keepalive) else { continue }
            for action in actions { perform(node, action, for: peer) }
        }
        closeStalledConnections(node, now: now)
        if node.outbound.takeRelease() {
            HeapRelease.trim()
            node.counters.outboundMemoryReleases += 1
        }
        node.pairing.expireInvitationIfNeeded(node)
        node.deviceSet.timerPass(node, now: now)
        return true
    }

    /// Closes every channel whose connection stayed over its outbound reply limit for longer
    /// than the stall time (the peer does not read what this daemon sends); it redials.
    func closeStalledConnections(_ node: isolated MeshNode, now: UInt64) {
        for stalled in node.outbound.stalled(now: now) {
            guard let peer = node.channels.peers.first(where: { $0.value.connection?.id == stalled.connection })?.key else { continue }
            node.counters.channelsClosedNotReading += 1
            node.logger.warning("closing a channel: the peer does not read what this daemon sends",
                                metadata: ["peer.id": "\(peer.short)", "queued.bytes": "\(stalled.charge)",
                                           "seconds": "\(Int(stalled.seconds.rounded()))"])
            node.dropChannel(peer, reason: MeshNode.outboundStalledReason(seconds: stalled.seconds), redial: true)
        }
    }

    /// Carries out what the timer pass decided for `peer`; an action whose channel closed
    /// meanwhile (a failed send drops it) is skipped.
    func perform(_ node: isolated MeshNode, _ action: PeerTimerAction, for peer: DeviceID) {
        guard node.channels.peers[peer]?.channel != nil else { return }
        switch action {
        case .leaseExpired:
            node.counters.leasesExpired += 1
            node.logger.debug("reachability lease expired", metadata: ["peer.id": "\(peer.short)"])
            node.dropChannel(peer, reason: "no authenticated packet within the reachability lease", redial: true)
        case .keepaliveDatagram:
            let t1 = node.clock.wallNanoseconds()
            if node.sendDatagram(.keepaliveRequest(t1: t1), to: peer) {
                node.channels.peers[peer]?.estimator.requestSent(t1: t1)
                node.counters.keepalivesSent += 1
            }
        case .keepaliveStream:
            let t1 = node.clock.wallNanoseconds()
            if node.sendStream(.keepaliveRequest(t1: t1), to: peer) != nil {
                node.channels.peers[peer]?.estimator.requestSent(t1: t1)
                node.counters.keepalivesSent += 1
            }
        case .startRekey:
            startRekey(node, peer)
        case .keysExpired:
            node.counters.channelsExpired += 1
            node.dropChannel(peer, reason: "keys older than the reject-after limit", redial: true)
        }
    }
}
