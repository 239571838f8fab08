import Logging
import MeshDiscovery
import MeshCore

/// Discovery wired into the node: `NodeDiscoveryService` runs the backend and reports here;
/// `PeerFinder` does the work.
extension MeshNode: NodeDiscoveryHost {
    /// Discovery as `meshd` runs it: Avahi merged with the static peers (none over mDNS when
    /// `mdns` is off or the daemon listens on a loopback address).
    public static func defaultDiscovery(for configuration: DaemonConfiguration, logger: Logger) -> any PeerDiscovery {
        NodeDiscoveryDefaults.discovery(for: configuration, logger: logger)
    }

    /// Runs discovery until the node stops (see `NodeDiscoveryService`).
    nonisolated func runDiscovery() async {
        guard let discovery else { return }
        await NodeDiscoveryService(discovery: discovery, node: self, loop: loop, logger: logger).run()
    }

    nonisolated func maintainDiscoveryOnLoop() -> Bool { onLoop { $0.finder.maintain($0) } }

    func wantedAdvertisement() -> DiscoveryAdvertisement? { finder.wantedAdvertisement(self) }

    func discoveryStarted(advertising advertisement: DiscoveryAdvertisement?,
                          updates: AsyncStream<DiscoveryAdvertisement?>.Continuation) {
        finder.started(self, advertising: advertisement, updates: updates)
    }

    func applyDiscovery(_ event: DiscoveryEvent) { finder.apply(self, event) }

    func advertisementUpdated(_ advertisement: DiscoveryAdvertisement?, succeeded: Bool) {
        finder.advertisementUpdated(self, advertisement, succeeded: succeeded)
    }

    func discoveryEnded() { finder.ended() }
}
