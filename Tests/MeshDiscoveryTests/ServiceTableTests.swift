import Testing
@testable import MeshDiscovery

@Suite("mDNS service table")
struct ServiceTableTests {
    private func key(_ iface: Int32, v6: Bool, _ name: String = "bob") -> MDNSServiceTable.InstanceKey {
        .init(interfaceIndex: iface, ipv6: v6, name: name, domain: "local")
    }

    private func address(_ host: String, _ family: DiscoveredAddress.Family = .ipv4) -> DiscoveredAddress {
        DiscoveredAddress(host: host, port: 7000, family: family, interfaceIndex: 2, interfaceName: "eth0")
    }

    @Test("IPv4 and IPv6 resolutions of one name become one service with both addresses")
    func dualStack() {
        var table = MDNSServiceTable()
        let txt = DiscoveryTXTRecord(protocolVersion: 1, deviceIDHint: "B0B", pairingHint: nil)
        _ = table.resolved(key(2, v6: false), address: address("198.18.0.2"), hostName: "b.local", txt: txt)
        let change = table.resolved(key(2, v6: true), address: address("2001:2::2", .ipv6), hostName: "b.local", txt: txt)
        guard case .updated(let service) = change else { Issue.record("expected an update"); return }
        #expect(service.addresses.map(\.host) == ["198.18.0.2", "2001:2::2"])
        #expect(service.deviceIDHint == "B0B")
    }

    @Test("the newest TXT wins; removing the last instance removes the service")
    func newestAndRemoval() {
        var table = MDNSServiceTable()
        _ = table.resolved(key(2, v6: false), address: address("198.18.0.2"), hostName: "b.local",
                           txt: DiscoveryTXTRecord(protocolVersion: 1, deviceIDHint: "B", pairingHint: nil))
        let paired = table.resolved(key(3, v6: false), address: address("198.18.1.2"), hostName: "b.local",
                                    txt: DiscoveryTXTRecord(protocolVersion: 1, deviceIDHint: "B", pairingHint: "p"))
        guard case .updated(let service) = paired else { Issue.record("expected an update"); return }
        #expect(service.pairingHint == "p")
        #expect(service.addresses.count == 2)
        guard case .updated(let left)? = table.removed(key(3, v6: false)) else { Issue.record("expected an update"); return }
        #expect(left.addresses.map(\.host) == ["198.18.0.2"])
        #expect(table.removed(key(2, v6: false)) == .removed(instanceName: "bob"))
        #expect(table.removed(key(2, v6: false)) == nil)
    }

    @Test("a moved address replaces the old one")
    func addressChange() {
        var table = MDNSServiceTable()
        let txt = DiscoveryTXTRecord(protocolVersion: 1, deviceIDHint: "B", pairingHint: nil)
        _ = table.resolved(key(2, v6: false), address: address("198.18.0.2"), hostName: "b.local", txt: txt)
        guard case .updated(let moved) = table.resolved(key(2, v6: false), address: address("198.18.0.102"),
                                                         hostName: "b.local", txt: txt) else {
            Issue.record("expected an update")
            return
        }
        #expect(moved.addresses.map(\.host) == ["198.18.0.102"])
    }
}
