import MeshCrypto

extension MeshNode {
    /// Ticks keepalives, leases, rekeys and the pairing code's expiry until cancelled.
    nonisolated func runTimers() async {
        let interval = Nanoseconds.from(seconds: max(0.02, min(0.25, configuration.keepaliveInterval / 4)))
        while !Task.isCancelled {
            do { try await Task.sleep(nanoseconds: interval) } catch { return }
            guard await tick() else { return }
        }
    }

    /// One timer pass over every active channel; false once the node stops.
    func tick() -> Bool {
        guard phase == .running else { return false }
        let now = clock.monotonicNanoseconds()
        let keepalive = Nanoseconds.from(seconds: max(configuration.keepaliveInterval, 0.01))
        for (peer, runtime) in peers where runtime.channel != nil {
            guard runtime.lease.isValid(now: now) else {
                counters.leasesExpired += 1
                logger.debug("reachability lease expired", metadata: ["peer.id": "\(peer.short)"])
                dropChannel(peer, reason: "no authenticated packet within the reachability lease", redial: true)
                continue
            }
            if now >= runtime.nextKeepaliveAt {
                peers[peer]?.nextKeepaliveAt = now &+ keepalive
                let t1 = clock.wallNanoseconds()
                if sendDatagram(.keepaliveRequest(t1: t1), to: peer) {
                    peers[peer]?.estimator.requestSent(t1: t1)
                    counters.keepalivesSent += 1
                }
                // Datagrams may be filtered where TCP passes: when the lease is about to run
                // out, ask over the stream too, so a UDP-less network keeps a (slower) channel.
                if let expiry = runtime.lease.expiresAt, expiry > now, expiry - now < 2 * keepalive {
                    let t1 = clock.wallNanoseconds()
                    if sendStream(.keepaliveRequest(t1: t1), to: peer) != nil {
                        peers[peer]?.estimator.requestSent(t1: t1)
                        counters.keepalivesSent += 1
                    }
                }
            }
            guard var channel = peers[peer]?.channel else { continue }
            let action = channel.tick(now: now)
            peers[peer]?.channel = channel
            switch action {
            case .none: break
            case .startRekey: startRekey(peer)
            case .closeExpired:
                counters.channelsExpired += 1
                dropChannel(peer, reason: "keys older than the reject-after limit", redial: true)
            }
        }
        expireInvitationIfNeeded()
        return true
    }
}
