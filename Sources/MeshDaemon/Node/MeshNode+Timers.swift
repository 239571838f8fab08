import MeshCrypto
import NIOCore

extension MeshNode {
    /// Ticks keepalives, leases, rekeys and the pairing code's expiry on the node's loop
    /// until the node stops (`closeEverything` cancels it).
    func startTimers() {
        let interval = TimeAmount.nanoseconds(Int64(clamping: Nanoseconds.from(seconds: max(0.02, min(0.25, configuration.keepaliveInterval / 4)))))
        timerTask = loop.scheduleRepeatedTask(initialDelay: interval, delay: interval) { [weak self] task in
            guard let self, self.onLoop({ $0.tick() }) else {
                task.cancel()
                return
            }
        }
    }

    /// One timer pass over every active channel; false once the node stops.
    func tick() -> Bool {
        guard phase == .running else { return false }
        let now = clock.monotonicNanoseconds()
        let keepalive = Nanoseconds.from(seconds: max(configuration.keepaliveInterval, 0.01))
        for peer in Array(peers.keys) {
            guard let actions = peers[peer]?.timerTick(now: now, keepaliveInterval: keepalive) else { continue }
            for action in actions { perform(action, for: peer) }
        }
        expireInvitationIfNeeded()
        return true
    }

    /// Carries out what the timer pass decided for `peer`; an action whose channel closed
    /// meanwhile (a failed send drops it) is skipped.
    func perform(_ action: PeerTimerAction, for peer: DeviceID) {
        guard peers[peer]?.channel != nil else { return }
        switch action {
        case .leaseExpired:
            counters.leasesExpired += 1
            logger.debug("reachability lease expired", metadata: ["peer.id": "\(peer.short)"])
            dropChannel(peer, reason: "no authenticated packet within the reachability lease", redial: true)
        case .keepaliveDatagram:
            let t1 = clock.wallNanoseconds()
            if sendDatagram(.keepaliveRequest(t1: t1), to: peer) {
                peers[peer]?.estimator.requestSent(t1: t1)
                counters.keepalivesSent += 1
            }
        case .keepaliveStream:
            let t1 = clock.wallNanoseconds()
            if sendStream(.keepaliveRequest(t1: t1), to: peer) != nil {
                peers[peer]?.estimator.requestSent(t1: t1)
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
