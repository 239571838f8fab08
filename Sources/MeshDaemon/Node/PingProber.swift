import MeshCrypto
import MeshCore

/// `meshctl ping` as the node runs it: sends probes over each path of a peer's active channel,
/// times them out on the node's loop, and matches the replies.
///
/// Owns the outstanding probes (`PingProbes`); runs on the node's executor (every method that
/// needs the node takes it `isolated`).
final class PingProber {
    /// Outstanding ping probes.
    var pings = PingProbes()

    /// Measures `count` round trips (1…10 000) over each path to a peer with an active channel.
    func ping(_ node: isolated MeshNode, deviceID: String, count: Int) async throws -> PingReport {
        let peer = try node.resolvePeer(deviceID)
        guard node.channels.peers[peer]?.channel != nil else { throw MeshError.peerNotActive(deviceID) }
        let reports = await PingSeries(count: count).run(isActive: { node.channels.peers[peer]?.channel != nil }) { path in
            await probe(node, peer, path: path)
        }
        return PingReport(deviceID: peer.description, paths: reports)
    }

    /// One probe; the round trip in nanoseconds, or nil when no reply came in time.
    func probe(_ node: isolated MeshNode, _ peer: DeviceID, path: PingPath) async -> UInt64? {
        let id = pings.start(peer: peer)
        let start = node.clock.monotonicNanoseconds()
        let sent = switch path {
        case .datagram: node.sendDatagram(.pingRequest(id: id), to: peer)
        case .stream: node.sendStream(.pingRequest(id: id), to: peer) != nil
        }
        guard sent else {
            pings.cancel(id)
            return nil
        }
        // The timeout is an event-loop timer, cancelled when the reply comes (cheaper than a
        // sleeping task per probe, and it leaves nothing behind).
        let timeout = node.loop.scheduleTask(in: .nanoseconds(Nanoseconds.signed(seconds: max(node.tuning.pingTimeout, 0.001)))) {
            [weak node] in
            guard let node else { return }
            node.onLoop { $0.prober.finish(id, at: nil, from: nil) }
        }
        let end = await withCheckedContinuation { continuation in
            if let result = pings.wait(id, continuation: continuation) { continuation.resume(returning: result) }
        }
        timeout.cancel()
        return end.map { $0 >= start ? $0 - start : 0 }
    }

    /// A reply arrived at `at` (monotonic ns) from `peer`, or the probe timed out (`at` nil).
    func finish(_ id: UInt32, at: UInt64?, from peer: DeviceID? = nil) {
        pings.finish(id, at: at, from: peer)?.resume(returning: at)
    }

    /// The channel to `peer` closed (nil: the node stops): its probes fail now.
    func fail(to peer: DeviceID?) {
        for id in pings.ids(of: peer) { finish(id, at: nil) }
    }
}
