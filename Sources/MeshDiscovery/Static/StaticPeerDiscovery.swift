import Logging
import Synchronization

/// Discovery from a configured list of addresses: for networks without multicast, and the
/// fallback while avahi-daemon is absent.
///
/// On ``start(advertising:)`` it reports every peer as ``DiscoveryEvent/resolved(_:)`` with
/// source ``DiscoverySource/staticConfiguration``; ``setPeers(_:)`` (a config reload) reports
/// the difference. It advertises nothing, never goes unavailable, and sends no traffic.
public final class StaticPeerDiscovery: PeerDiscovery {
    private struct State {
        var peers: [StaticPeer]
        var running = false
        var stopped = false
    }

    private let hub = DiscoveryEventHub()
    private let state: Mutex<State>
    private let logger: Logger

    /// Creates the discovery for `peers`; duplicates by name keep the first.
    public init(peers: [StaticPeer], logger: Logger) {
        self.state = Mutex(State(peers: StaticPeerDiscovery.unique(peers)))
        self.logger = logger
    }

    /// Reports every configured peer. The advertisement is ignored (nothing is published).
    ///
    /// - Throws: ``DiscoveryError/Code/alreadyStarted`` when called twice or after ``stop()``.
    public func start(advertising advertisement: DiscoveryAdvertisement?) async throws(DiscoveryError) {
        let peers = try state.withLock { s throws(DiscoveryError) -> [StaticPeer] in
            guard !s.running, !s.stopped else {
                throw DiscoveryError(code: .alreadyStarted, message: "StaticPeerDiscovery was already started")
            }
            s.running = true
            return s.peers
        }
        if peers.isEmpty {
            logger.debug("no static peers configured")
        } else {
            logger.info("static peers configured", metadata: ["peers": "\(peers.map(\.description).joined(separator: " "))"])
        }
        for peer in peers { hub.resolved(peer.service) }
    }

    /// Accepted and ignored: static discovery publishes nothing.
    public func updateAdvertisement(_ advertisement: DiscoveryAdvertisement?) async throws(DiscoveryError) {}

    /// A new event stream; see ``PeerDiscovery/events()``.
    public func events() -> AsyncStream<DiscoveryEvent> {
        hub.subscribe()
    }

    /// Replaces the list: removed peers are reported removed, new or changed ones resolved.
    public func setPeers(_ peers: [StaticPeer]) {
        let new = StaticPeerDiscovery.unique(peers)
        let (old, running) = state.withLock { s -> ([StaticPeer], Bool) in
            defer { s.peers = new }
            return (s.peers, s.running && !s.stopped)
        }
        guard running else { return }
        let newNames = Set(new.map(\.name))
        for peer in old where !newNames.contains(peer.name) {
            hub.removed(instanceName: peer.name, source: .staticConfiguration)
        }
        for peer in new { hub.resolved(peer.service) }
    }

    /// Finishes the event streams. Idempotent.
    public func stop() async {
        state.withLock { s in
            s.running = false
            s.stopped = true
        }
        hub.finish()
    }

    private static func unique(_ peers: [StaticPeer]) -> [StaticPeer] {
        var seen = Set<String>()
        return peers.filter { seen.insert($0.name).inserted }
    }
}
