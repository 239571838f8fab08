import MeshCrypto
import MeshCore

extension MeshNode {
    /// Measures `count` round trips (1…10 000) over each path to a peer with an active channel.
    public func ping(deviceID: String, count: Int) async throws -> PingReport {
        let peer = try resolvePeer(deviceID)
        guard channels.peers[peer]?.channel != nil else { throw MeshError.peerNotActive(deviceID) }
        let reports = await PingSeries(count: count).run(isActive: { channels.peers[peer]?.channel != nil }) { path in
            await probe(peer, path: path)
        }
        return PingReport(deviceID: peer.description, paths: reports)
    }

    /// One probe; the round trip in nanoseconds, or nil when no reply came in time.
    func probe(_ peer: DeviceID, path: PingPath) async -> UInt64? {
        let id = pings.start(peer: peer)
        let start = clock.monotonicNanoseconds()
        let sent = switch path {
        case .datagram: sendDatagram(.pingRequest(id: id), to: peer)
        case .stream: sendStream(.pingRequest(id: id), to: peer) != nil
        }
        guard sent else {
            pings.cancel(id)
            return nil
        }
        // The timeout is an event-loop timer, cancelled when the reply comes (cheaper than a
        // sleeping task per probe, and it leaves nothing behind).
        let timeout = loop.scheduleTask(in: .nanoseconds(Nanoseconds.signed(seconds: max(tuning.pingTimeout, 0.001)))) {
            [weak self] in
            guard let self else { return }
            self.onLoop { $0.finishPing(id, at: nil, from: nil) }
        }
        let end = await awaitPingReply(id)
        timeout.cancel()
        return end.map { $0 >= start ? $0 - start : 0 }
    }

    private func awaitPingReply(_ id: UInt32) async -> UInt64? {
        await withCheckedContinuation { continuation in
            if let result = pings.wait(id, continuation: continuation) { continuation.resume(returning: result) }
        }
    }

    /// A reply arrived at `at` (monotonic ns) from `peer`, or the probe timed out (`at` nil).
    func finishPing(_ id: UInt32, at: UInt64?, from peer: DeviceID? = nil) {
        pings.finish(id, at: at, from: peer)?.resume(returning: at)
    }

    /// The channel to `peer` closed: its probes fail now.
    func failPings(to peer: DeviceID) {
        for id in pings.ids(of: peer) { finishPing(id, at: nil) }
    }
}
