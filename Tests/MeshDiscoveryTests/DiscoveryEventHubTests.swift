import Testing
@testable import MeshDiscovery

@Suite("Discovery event hub")
struct DiscoveryEventHubTests {
    private func service(_ name: String, _ host: String, source: DiscoverySource = .mdns) -> DiscoveredService {
        DiscoveredService(instanceName: name, source: source,
                          addresses: [DiscoveredAddress(host: host, port: 1, family: .ipv4)])
    }

    private func collect(_ stream: AsyncStream<DiscoveryEvent>) async -> [DiscoveryEvent] {
        var out: [DiscoveryEvent] = []
        for await event in stream { out.append(event) }
        return out
    }

    @Test("a late subscriber gets availability, the published name and every service, then live events")
    func replay() async {
        let hub = DiscoveryEventHub()
        hub.markAvailable()
        hub.published(instanceName: "me")
        hub.resolved(service("b", "198.18.0.2"))
        let stream = hub.subscribe()
        hub.resolved(service("c", "198.18.0.3"))
        hub.finish()
        #expect(await collect(stream) == [.available, .published(instanceName: "me"),
                                          .resolved(service("b", "198.18.0.2")), .resolved(service("c", "198.18.0.3"))])
    }

    @Test("unchanged values are not repeated; unknown removals are not reported")
    func deduplication() async {
        let hub = DiscoveryEventHub()
        let stream = hub.subscribe()
        #expect(hub.resolved(service("b", "198.18.0.2")))
        #expect(!hub.resolved(service("b", "198.18.0.2")))
        #expect(!hub.removed(instanceName: "nobody", source: .mdns))
        #expect(hub.markAvailable())
        #expect(!hub.markAvailable())
        hub.finish()
        #expect(await collect(stream).count == 2)
    }

    @Test("going unavailable forgets mDNS services but keeps static ones, and is reported once")
    func outage() async {
        let hub = DiscoveryEventHub()
        hub.markAvailable()
        hub.resolved(service("b", "198.18.0.2"))
        hub.resolved(service("s", "198.18.0.9", source: .staticConfiguration))
        let reason = DiscoveryUnavailableReason(code: .disconnected, message: "gone")
        #expect(hub.markUnavailable(reason, forgetting: .mdns))
        #expect(!hub.markUnavailable(reason, forgetting: .mdns))
        let late = hub.subscribe()
        hub.finish()
        #expect(await collect(late) == [.unavailable(reason), .resolved(service("s", "198.18.0.9", source: .staticConfiguration))])
    }
}
