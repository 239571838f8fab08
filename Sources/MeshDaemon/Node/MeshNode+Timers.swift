import MeshCrypto
import NIOCore

extension MeshNode {
    /// Ticks keepalives, leases, rekeys and the pairing code's expiry on the node's loop
    /// until the node stops (`closeEverything` cancels it).
    func startTimers() {
        timerTask = LoopTicker.start(on: loop, every: LoopTicker.timerPassInterval(keepalive: configuration.keepaliveInterval)) {
            [weak self] in
            guard let self else { return false }
            return self.onLoop { $0.tick() }
        }
    }

    /// One timer pass over every active channel; false once the node stops.
    func tick() -> Bool {
        guard phase == .running else { return false }
        let now = clock.monotonicNanoseconds()
        let keepalive = Nanoseconds.from(seconds: max(configuration.keepaliveInterval, 0.01))
        for peer in Array(channels.peers.keys) {
            guard let actions = channels.peers[peer]?.timerTick(now: now, keepaliveInterval: keepalive) else { continue }
            for action in actions { perform(action, for: peer) }
        }
        expireInvitationIfNeeded()
        return true
    }

    /// Carries out what the timer pass decided for `peer`; an action whose channel closed
    /// meanwhile (a failed send drops it) is skipped.
    func perform(_ action: PeerTimerAction, for peer: DeviceID) {
        guard channels.peers[peer]?.channel != nil else { return }
        switch action {
        case .leaseExpired:
            counters.leasesExpired += 1
            logger.debug("reachability lease expired", metadata: ["peer.id": "\(peer.short)"])
            dropChannel(peer, reason: "no authenticated packet within the reachability lease", redial: true)
        case .keepaliveDatagram:
            let t1 = clock.wallNanoseconds()
            if sendDatagram(.keepaliveRequest(t1: t1), to: peer) {
                channels.peers[peer]?.estimator.requestSent(t1: t1)
                counters.keepalivesSent += 1
            }
        case .keepaliveStream:
            let t1 = clock.wallNanoseconds()
            if sendStream(.keepaliveRequest(t1: t1), to: peer) != nil {
                channels.peers[peer]?.estimator.requestSent(t1: t1)
                counters.keepalivesSent += 1
            }
        case .startRekey:
            startRekey(peer)
        case .keysExpired:
            counters.channelsExpired += 1
            dropChannel(peer, reason: "keys older than the reject-after limit", redial: true)
        }
    }
}
