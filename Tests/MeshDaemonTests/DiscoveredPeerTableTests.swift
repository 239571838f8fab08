import MeshCrypto
import MeshDiscovery
import Testing
@testable import MeshDaemon

/// The pure fold of discovery events into per-device endpoints.
@Suite("Discovered peer table")
struct DiscoveredPeerTableTests {
    static let bob = DeviceID(publicKey: Array(repeating: 7, count: 32))
    static let carol = DeviceID(publicKey: Array(repeating: 9, count: 32))

    static func service(_ name: String, for device: DeviceID?, hosts: [String], port: UInt16 = 47470,
                        version: Int? = 1, pairing: String? = nil) -> DiscoveredService {
        DiscoveredService(instanceName: name, source: .mdns, protocolVersion: version,
                          deviceIDHint: device.map { DiscoveryAdvertisement.deviceIDHint(for: $0.description) },
                          pairingHint: pairing, hostName: name + ".local",
                          addresses: hosts.map { host in
                              host.contains(":")
                                  ? DiscoveredAddress(host: host, port: port, family: .ipv6, interfaceIndex: 2, interfaceName: "eth0")
                                  : DiscoveredAddress(host: host, port: port, family: .ipv4, interfaceIndex: 2, interfaceName: "eth0")
                          }.sorted())
    }

    @Test("only services whose hint matches a paired device give that device endpoints")
    func matchesPairedDevicesOnly() {
        var table = DiscoveredPeerTable()
        #expect(table.setPaired([Self.bob]).isEmpty)
        #expect(table.apply(.resolved(Self.service("carol", for: Self.carol, hosts: ["198.18.0.3"]))).isEmpty)
        #expect(table.apply(.resolved(Self.service("anon", for: nil, hosts: ["198.18.0.4"]))).isEmpty)
        #expect(table.apply(.resolved(Self.service("bob-next", for: Self.bob, hosts: ["198.18.0.5"], version: 2))).isEmpty)
        let changes = table.apply(.resolved(Self.service("bob", for: Self.bob, hosts: ["198.18.0.2"])))
        #expect(changes == [.init(peer: Self.bob, previous: [], current: [.init(host: "198.18.0.2", port: 47470)])])
        #expect(table.mdnsServices.count == 4)

        // Carol gets paired later: her already known service is matched at once.
        let later = table.setPaired([Self.bob, Self.carol])
        #expect(later.map(\.peer) == [Self.carol])
    }

    @Test("a move replaces the endpoints; routable before link-local, which keeps its scope")
    func moveAndOrder() {
        var table = DiscoveredPeerTable()
        _ = table.setPaired([Self.bob])
        _ = table.apply(.resolved(Self.service("bob", for: Self.bob, hosts: ["198.18.0.2"])))
        let moved = table.apply(.resolved(Self.service("bob", for: Self.bob, hosts: ["fe80::2", "198.18.0.102", "2001:2::2"])))
        #expect(moved.count == 1)
        #expect(moved.first?.previousHosts == ["198.18.0.2"])
        #expect(moved.first?.currentHosts == ["198.18.0.102", "2001:2::2", "fe80::2"])
        #expect(table.mdnsEndpoints[Self.bob]?.map(\.description) == ["198.18.0.102:47470", "[2001:2::2]:47470", "[fe80::2%eth0]:47470"])
        // The same view again is no change.
        #expect(table.apply(.resolved(Self.service("bob", for: Self.bob, hosts: ["fe80::2", "198.18.0.102", "2001:2::2"]))).isEmpty)
    }

    @Test("an outage keeps the endpoints until the service is resolved anew; removal clears them")
    func outageAndRemoval() {
        var table = DiscoveredPeerTable()
        _ = table.setPaired([Self.bob])
        _ = table.apply(.available)
        _ = table.apply(.resolved(Self.service("bob", for: Self.bob, hosts: ["198.18.0.2"])))
        #expect(table.apply(.unavailable(.init(code: .disconnected, message: "gone"))).isEmpty)
        #expect(table.mdnsAvailable == false)
        #expect(table.outages == 1)
        #expect(table.mdnsEndpoints[Self.bob]?.count == 1)
        #expect(table.apply(.unavailable(.init(code: .daemonNotRunning, message: "still gone"))).isEmpty)
        #expect(table.outages == 1)
        #expect(table.apply(.available).isEmpty)
        #expect(table.mdnsEndpoints[Self.bob]?.count == 1)
        let removed = table.apply(.removed(instanceName: "bob", source: .mdns))
        #expect(removed.first?.current == [])
        #expect(table.mdnsEndpoints[Self.bob] == nil)
    }

    @Test("inviters are found by pairing hint, case-insensitively, and static services by name")
    func invitersAndStatic() {
        var table = DiscoveredPeerTable()
        _ = table.apply(.resolved(Self.service("one", for: Self.bob, hosts: ["198.18.0.2"], pairing: "7K")))
        _ = table.apply(.resolved(Self.service("two", for: Self.carol, hosts: ["198.18.0.3"], pairing: "Q4")))
        _ = table.apply(.resolved(Self.service("three", for: nil, hosts: ["198.18.0.4"])))
        #expect(table.inviters(hint: "7k").map(\.instanceName) == ["one"])
        #expect(table.inviters(hint: "ZZ").isEmpty)
        _ = table.apply(.resolved(DiscoveredService(instanceName: "b", source: .staticConfiguration,
                                                    addresses: [DiscoveredAddress(host: "10.0.0.2", port: 1, family: .ipv4)])))
        _ = table.apply(.resolved(DiscoveredService(instanceName: "a", source: .staticConfiguration,
                                                    addresses: [DiscoveredAddress(host: "10.0.0.1", port: 1, family: .ipv4)])))
        #expect(table.staticEndpoints.map(\.description) == ["10.0.0.1:1", "10.0.0.2:1"])
    }

    @Test("local interface differences name what vanished and what appeared")
    func interfaceDifference() throws {
        let before = LocalInterfaces(addresses: [.init(interface: "eth0", host: "198.18.0.2"), .init(interface: "eth1", host: "10.1.1.1")])
        let after = LocalInterfaces(addresses: [.init(interface: "eth0", host: "198.18.0.102"), .init(interface: "eth1", host: "10.1.1.1")])
        let difference = after.difference(from: before)
        #expect(difference.vanishedHosts(stillPresent: after) == ["198.18.0.2"])
        #expect(difference.appeared == [.init(interface: "eth0", host: "198.18.0.102")])
        #expect(after.difference(from: after).isEmpty)
        // This machine has at least loopback, which is left out; the call itself works.
        let now = try #require(LocalInterfaces.current())
        #expect(!now.hosts.contains("127.0.0.1"))
    }
}
