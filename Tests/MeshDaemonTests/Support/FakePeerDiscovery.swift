import MeshCore
import MeshDiscovery

/// A `PeerDiscovery` the test drives: it reports the services the test announces and records
/// every advertisement the node asks for.
final class FakePeerDiscovery: PeerDiscovery {
    private struct State {
        var subscribers: [AsyncStream<DiscoveryEvent>.Continuation] = []
        var replay: [DiscoveryEvent] = []
        var advertisements: [DiscoveryAdvertisement?] = []
        var started = false
        var stopped = false
    }

    private let state = Locked(State())

    func start(advertising advertisement: DiscoveryAdvertisement?) async throws(DiscoveryError) {
        state.withLock {
            $0.started = true
            $0.advertisements.append(advertisement)
        }
        emit(.available)
    }

    func updateAdvertisement(_ advertisement: DiscoveryAdvertisement?) async throws(DiscoveryError) {
        state.withLock { $0.advertisements.append(advertisement) }
    }

    func events() -> AsyncStream<DiscoveryEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: DiscoveryEvent.self)
        let replay = state.withLock { s -> [DiscoveryEvent]? in
            guard !s.stopped else { return nil }
            s.subscribers.append(continuation)
            return s.replay
        }
        guard let replay else {
            continuation.finish()
            return stream
        }
        for event in replay { continuation.yield(event) }
        return stream
    }

    func stop() async {
        let subscribers = state.withLock { s -> [AsyncStream<DiscoveryEvent>.Continuation] in
            s.stopped = true
            defer { s.subscribers = [] }
            return s.subscribers
        }
        for subscriber in subscribers { subscriber.finish() }
    }

    /// Sends `event` to every subscriber (and to later ones).
    func emit(_ event: DiscoveryEvent) {
        let subscribers = state.withLock { s -> [AsyncStream<DiscoveryEvent>.Continuation] in
            s.replay.append(event)
            return s.subscribers
        }
        for subscriber in subscribers { subscriber.yield(event) }
    }

    /// Announces a `_sessionmesh._udp` service as mDNS would.
    func announce(name: String, deviceID: String?, pairingHint: String? = nil, host: String = "127.0.0.1", port: Int,
                  version: Int? = 1) {
        emit(.resolved(DiscoveredService(
            instanceName: name, source: .mdns, protocolVersion: version,
            deviceIDHint: deviceID.map(DiscoveryAdvertisement.deviceIDHint(for:)), pairingHint: pairingHint,
            hostName: name + ".local",
            addresses: [DiscoveredAddress(host: host, port: UInt16(port), family: .ipv4)])))
    }

    /// Every advertisement the node asked for, in order.
    var advertisements: [DiscoveryAdvertisement?] { state.withLock { $0.advertisements } }
    /// Whether `stop()` was called.
    var isStopped: Bool { state.withLock { $0.stopped } }
}
