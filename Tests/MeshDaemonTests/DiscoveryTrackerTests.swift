import MeshCore
import MeshCrypto
import MeshDiscovery
import Testing
@testable import MeshDaemon

/// What a discovery input makes the node do, decided by `DiscoveryTracker` without a node,
/// loop or socket.
@Suite("Discovery tracker")
struct DiscoveryTrackerTests {
    typealias Peer = DiscoveryTracker.Peer
    static let bob = DiscoveredPeerTableTests.bob
    static let carol = DiscoveredPeerTableTests.carol

    static func resolved(_ name: String, for device: DeviceID?, hosts: [String], pairing: String? = nil) -> DiscoveryEvent {
        .resolved(DiscoveredPeerTableTests.service(name, for: device, hosts: hosts, pairing: pairing))
    }

    static func endpoint(_ text: String) -> DaemonConfiguration.Endpoint {
        EndpointParser.parse(text) ?? .init(host: "invalid", port: 1)
    }

    static func interfaces(_ hosts: [String]) -> LocalInterfaces {
        LocalInterfaces(addresses: Set(hosts.map { LocalInterfaces.Address(interface: "eth0", host: $0) }))
    }

    @Test("a paired device without a channel is dialled as soon as mDNS shows it; others never are")
    func dialsPairedDeviceWithoutChannel() {
        var tracker = DiscoveryTracker()
        let peers = [Peer(id: Self.bob, hasChannel: false)]
        #expect(tracker.pairedDevicesChanged(peers).isEmpty)
        #expect(tracker.apply(Self.resolved("carol", for: Self.carol, hosts: ["198.18.0.3"]), peers: peers).isEmpty)
        let actions = tracker.apply(Self.resolved("bob", for: Self.bob, hosts: ["198.18.0.2"]), peers: peers)
        #expect(actions == [.addressesSeen(Self.bob, [Self.endpoint("198.18.0.2:47470")]), .dialNow(Self.bob)])
    }

    @Test("a device whose channel's address is no longer advertised is probed once, next to the channel")
    func probesMoveNextToLiveChannel() {
        var tracker = DiscoveryTracker()
        let peers = [Peer(id: Self.bob, hasChannel: true, remoteHost: "198.18.0.2", localHost: "198.18.0.1")]
        _ = tracker.pairedDevicesChanged(peers)
        // Its address is (still) advertised: nothing to do besides noting it.
        #expect(tracker.apply(Self.resolved("bob", for: Self.bob, hosts: ["198.18.0.2"]), peers: peers)
            == [.addressesSeen(Self.bob, [Self.endpoint("198.18.0.2:47470")])])
        let moved = [Self.endpoint("198.18.0.102:47470")]
        #expect(tracker.apply(Self.resolved("bob", for: Self.bob, hosts: ["198.18.0.102"]), peers: peers)
            == [.addressesSeen(Self.bob, moved), .probe(Self.bob, moved)])
        #expect(tracker.table.probes == 1)
        // The same addresses again while that probe runs: no second probe.
        _ = tracker.apply(Self.resolved("bob", for: Self.bob, hosts: ["198.18.0.2"]), peers: peers)
        #expect(tracker.apply(Self.resolved("bob", for: Self.bob, hosts: ["198.18.0.102"]), peers: peers)
            == [.addressesSeen(Self.bob, moved)])
        // The probe found no authenticated answer: counted, and the addresses may be tried again.
        let failed = tracker.probeEnded(Self.bob, addresses: moved, switched: false)
        #expect(failed)
        #expect(tracker.table.probesFailed == 1)
        #expect(tracker.table.probedAddresses.isEmpty)
        _ = tracker.apply(Self.resolved("bob", for: Self.bob, hosts: ["198.18.0.2"]), peers: peers)
        #expect(tracker.apply(Self.resolved("bob", for: Self.bob, hosts: ["198.18.0.102"]), peers: peers).last
            == .probe(Self.bob, moved))
        // A probe that switched the channel is no failure.
        let switchedFailed = tracker.probeEnded(Self.bob, addresses: moved, switched: true)
        #expect(!switchedFailed)
        #expect(tracker.table.probesFailed == 1)
    }

    @Test("a withdrawn advertisement never closes a channel nor dials")
    func withdrawalDoesNothing() {
        var tracker = DiscoveryTracker()
        let peers = [Peer(id: Self.bob, hasChannel: true, remoteHost: "198.18.0.2", localHost: "198.18.0.1")]
        _ = tracker.pairedDevicesChanged(peers)
        _ = tracker.apply(Self.resolved("bob", for: Self.bob, hosts: ["198.18.0.2"]), peers: peers)
        #expect(tracker.apply(.removed(instanceName: "bob", source: .mdns), peers: peers).isEmpty)
        #expect(tracker.apply(.unavailable(.init(code: .disconnected, message: "gone")), peers: peers).isEmpty)
    }

    @Test("a static peer appearing dials every paired device without a channel")
    func staticPeerDialsUnconnected() {
        var tracker = DiscoveryTracker()
        let peers = [Peer(id: Self.bob, hasChannel: true), Peer(id: Self.carol, hasChannel: false)]
        let service = DiscoveredService(instanceName: "static", source: .staticConfiguration, protocolVersion: 1,
                                        deviceIDHint: nil, pairingHint: nil, hostName: "198.18.0.9",
                                        addresses: [DiscoveredAddress(host: "198.18.0.9", port: 47470, family: .ipv4,
                                                                      interfaceIndex: 0, interfaceName: nil)])
        #expect(tracker.apply(.resolved(service), peers: peers) == [.dialNow(Self.carol)])
    }

    @Test("an address of this machine that went away drops the channels bound to it and dials again")
    func localAddressGone() {
        var tracker = DiscoveryTracker()
        #expect(tracker.interfacesRead(Self.interfaces(["198.18.0.1", "198.18.1.1"])) == nil)
        #expect(tracker.interfacesRead(nil) == nil)
        #expect(tracker.interfacesRead(Self.interfaces(["198.18.0.1", "198.18.1.1"])) == nil)
        let now = Self.interfaces(["198.18.1.1", "198.18.2.1"])
        let difference = tracker.interfacesRead(now)
        #expect(difference?.vanished.map(\.host) == ["198.18.0.1"])
        let dave = DeviceID(publicKey: Array(repeating: 11, count: 32))
        let peers = [Peer(id: Self.bob, hasChannel: true, remoteHost: "198.18.0.2", localHost: "198.18.0.1"),
                     Peer(id: Self.carol, hasChannel: true, remoteHost: "198.18.1.2", localHost: "198.18.1.1"),
                     Peer(id: dave, hasChannel: false)]
        guard let difference else { return }
        #expect(tracker.localAddressesChanged(difference, now: now, peers: peers)
            == [.dropChannel(Self.bob, local: "198.18.0.1"), .dialNow(Self.bob), .dialNow(dave)])
        #expect(tracker.table.moves == 1)
    }

    @Test("one advertisement update at a time; a failed one is sent again, a settled one is not")
    func advertisementUpdates() throws {
        var tracker = DiscoveryTracker()
        let plain = try DiscoveryAdvertisement(instanceName: "a", port: 47470, deviceIDHint: "ABCD")
        let hinted = try DiscoveryAdvertisement(instanceName: "a", port: 47470, deviceIDHint: "ABCD", pairingHint: "7K")
        tracker.started(advertising: plain)
        #expect(tracker.advertise(plain) == nil)
        #expect(tracker.advertise(hinted) == .some(hinted))
        #expect(tracker.advertise(plain) == nil)     // the hinted one is under way
        tracker.advertisementUpdated(hinted, succeeded: false)
        #expect(tracker.advertise(hinted) == .some(hinted))
        tracker.advertisementUpdated(hinted, succeeded: true)
        #expect(tracker.advertise(hinted) == nil)
        #expect(tracker.advertise(plain) == .some(plain))
    }

    @Test("dial candidates: mDNS first, then pairing and configured, static, then observed newest first")
    func dialCandidateOrder() {
        var tracker = DiscoveryTracker()
        _ = tracker.pairedDevicesChanged([Peer(id: Self.bob, hasChannel: false)])
        _ = tracker.apply(Self.resolved("bob", for: Self.bob, hosts: ["198.18.0.2"]), peers: [])
        let record = PairedPeer(publicKey: Array(repeating: 7, count: 32), name: "bob", pairKey: SecretBytes.random(count: 32),
                                addresses: [PeerAddress(address: "198.18.5.1:1", source: .observed),
                                            PeerAddress(address: "198.18.4.1:1", source: .pairing),
                                            PeerAddress(address: "198.18.5.2:1", source: .observed),
                                            PeerAddress(address: "198.18.0.2:47470", source: .observed)],
                                pairedAt: 0)
        #expect(record.deviceID == Self.bob)
        let candidates = tracker.dialCandidates(record, staticPeers: [Self.endpoint("198.18.9.9:2")])
        #expect(candidates.map(\.description) == ["198.18.0.2:47470", "198.18.4.1:1", "198.18.9.9:2", "198.18.5.2:1", "198.18.5.1:1"])
        // Every candidate counts as tried: a kick during the dial finds nothing new to add.
        #expect(tracker.addressesBesideDial(of: Self.bob).isEmpty)
        _ = tracker.apply(Self.resolved("bob", for: Self.bob, hosts: ["198.18.0.2", "198.18.0.3"]), peers: [])
        #expect(tracker.addressesBesideDial(of: Self.bob).map(\.description) == ["198.18.0.3:47470"])
        #expect(tracker.addressesBesideDial(of: Self.bob).isEmpty)
        #expect(tracker.isStatic(Self.endpoint("198.18.9.9:2"), staticPeers: [Self.endpoint("198.18.9.9:2")]))
        #expect(!tracker.isStatic(Self.endpoint("198.18.0.2:47470"), staticPeers: [Self.endpoint("198.18.9.9:2")]))
        #expect(tracker.displayedAddresses(record).map(\.address).prefix(3)
            == ["198.18.0.2:47470", "198.18.0.3:47470", "198.18.5.1:1"])
    }

    @Test("status figures")
    func counters() {
        var tracker = DiscoveryTracker()
        #expect(tracker.counters(enabled: false) == ["discovery.enabled": 0])
        _ = tracker.pairedDevicesChanged([Peer(id: Self.bob, hasChannel: false)])
        _ = tracker.apply(.available, peers: [])
        _ = tracker.apply(Self.resolved("bob", for: Self.bob, hosts: ["198.18.0.2"]), peers: [])
        let figures = tracker.counters(enabled: true)
        #expect(figures["discovery.mdns_available"] == 1)
        #expect(figures["discovery.mdns_services"] == 1)
        #expect(figures["discovery.paired_found"] == 1)
        #expect(figures["discovery.moves_total"] == 0)
    }
}
