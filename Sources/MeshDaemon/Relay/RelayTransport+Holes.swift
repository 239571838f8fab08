import NIOCore

/// Stream paths that wait for a missing message. An honest broker passes every QoS 1 message
/// on while both ends are connected, but one over its queue limits, or a hostile one, may drop
/// one; the receiver then holds everything after it, and the path would stay stuck while the
/// channel's datagrams still flowed. A path that has waited `holeTimeout` for the missing
/// message closes as for a gap (counted in `gapsClosed`), telling the peer, and the node redials:
/// a dropped message costs delay, never the channel.
extension RelayTransport {
    /// How long a stream path waits for a missing message before it ends.
    static let holeTimeout: UInt64 = 2_000_000_000

    /// Notes which of `peer`'s paths wait for a missing message now, and arms the timer. On the
    /// loop, after every message from `peer`: without a hole anywhere it allocates nothing.
    func trackHoles(of peer: DeviceID) {
        guard let receiver = receiver(of: peer) else { return }
        let route = RouteKey.peer(peer)
        guard receiver.hasHoles || holes.keys.contains(where: { $0.route == route }) else { return }
        let waiting = Set(receiver.pathsWithHoles)
        let known = holes.keys.filter { $0.route == route }
        let now = clockNow()
        for key in known where !waiting.contains(key.path) { holes[key] = nil }
        for path in waiting where holes[PathKey(route: route, path: path)] == nil { holes[PathKey(route: route, path: path)] = now }
        armHoleCheck(now: now)
    }

    private func armHoleCheck(now: UInt64) {
        guard holeCheck == nil, let loop, let first = holes.values.min() else { return }
        let due = first &+ Self.holeTimeout
        let delay = due > now ? due - now : 0
        holeCheck = loop.scheduleTask(in: .nanoseconds(Int64(min(delay, UInt64(Int64.max))))) { [weak self] in
            self?.closeStalledPaths()
        }
    }

    private func closeStalledPaths() {
        holeCheck = nil
        let now = clockNow()
        for (key, since) in holes where now &- since >= Self.holeTimeout {
            holes[key] = nil
            guard case .peer(let peer) = key.route else { continue }
            closeForHole(key.path, of: peer)
            paths[key]?.close()
        }
        armHoleCheck(now: now)
    }
}
