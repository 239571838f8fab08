import Logging
import Testing
import MeshDiscovery

/// Lifecycle rules of AvahiPeerDiscovery that hold without touching Avahi at all (these
/// tests never call a successful `start`, so nothing is published or browsed from the root
/// namespace of the machine running them).
@Suite("AvahiPeerDiscovery lifecycle")
struct AvahiLifecycleTests {
    private let logger = Logger(label: "test")

    @Test("updating before start is refused with notRunning")
    func updateBeforeStart() async throws {
        let discovery = AvahiPeerDiscovery(logger: logger)
        let ad = try DiscoveryAdvertisement(instanceName: "a", port: 1, deviceIDHint: "A")
        await #expect(throws: DiscoveryError(code: .notRunning,
                                             message: "start AvahiPeerDiscovery before updating its advertisement")) {
            try await discovery.updateAdvertisement(ad)
        }
    }

    @Test("a stopped instance cannot be started, and its event streams are finished")
    func stoppedIsFinal() async throws {
        let discovery = AvahiPeerDiscovery(logger: logger)
        let before = discovery.events()
        await discovery.stop()
        await discovery.stop()
        await #expect(throws: DiscoveryError.self) { try await discovery.start(advertising: nil) }
        var count = 0
        for await _ in before { count += 1 }
        for await _ in discovery.events() { count += 1 }
        #expect(count == 0)
    }

    @Test("a device-ID hint only matches the device it was derived from")
    func hintMatching() {
        let service = DiscoveredService(instanceName: "b", source: .mdns, deviceIDHint: "MFZWGQ3T", addresses: [])
        #expect(service.hintMatches(deviceID: "mfzw-gq3t-kxyz"))
        #expect(!service.hintMatches(deviceID: "abcd-efgh-ijkl"))
        #expect(!DiscoveredService(instanceName: "c", source: .mdns, addresses: []).hintMatches(deviceID: "mfzw-gq3t"))
    }
}
