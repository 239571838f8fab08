import MeshCore
import MeshCrypto
import NIOCore
import Testing
@testable import MeshDaemon

/// How `meshctl status`, `meshctl peers` and every command naming a device read the node's
/// state, without a node.
@Suite("Node reports")
struct NodeReportsTests {
    static let devices = (1 ... 3).map { DeviceID(publicKey: Array(repeating: UInt8($0), count: 32)) }

    @Test("a device is found by its full ID, its short ID or a unique prefix, case and dashes ignored")
    func resolvesByPrefix() throws {
        for device in Self.devices {
            #expect(try NodeReports.resolvePeer(device.description, among: Self.devices) == device)
            #expect(try NodeReports.resolvePeer(device.short, among: Self.devices) == device)
            #expect(try NodeReports.resolvePeer(device.description.lowercased().replacingOccurrences(of: "-", with: ""),
                                                among: Self.devices) == device)
        }
    }

    @Test("an empty, unknown or ambiguous name is an error a person can act on")
    func refusals() {
        let empty = #expect(throws: MeshError.self) { try NodeReports.resolvePeer("--", among: Self.devices) }
        #expect(empty?.kind == .unknownPeer)
        let unknown = #expect(throws: MeshError.self) { try NodeReports.resolvePeer("ZZZZZZZZ", among: [DeviceID]()) }
        #expect(unknown?.kind == .unknownPeer)
        // Two IDs sharing a first character (33 IDs over 32 symbols: two must): that
        // character alone names neither.
        let many = (1 ... 33).map { DeviceID(publicKey: Array(repeating: UInt8($0), count: 32)) }
        let groups = Dictionary(grouping: many) { $0.description.prefix(1) }
        guard let shared = groups.first(where: { $0.value.count > 1 }) else {
            Issue.record("33 IDs over 32 first characters must share one")
            return
        }
        let ambiguous = #expect(throws: MeshError.self) { try NodeReports.resolvePeer(String(shared.key), among: many) }
        #expect(ambiguous?.kind == .invalidArgument)
        #expect(ambiguous?.message.contains("matches \(shared.value.count) paired devices") == true)
    }

    @Test("paths print as HOST:PORT, IPv6 in brackets")
    func hostPort() throws {
        #expect(NodeReports.hostPort(try SocketAddress(ipAddress: "198.18.0.2", port: 47470)) == "198.18.0.2:47470")
        #expect(NodeReports.hostPort(try SocketAddress(ipAddress: "2001:db8::2", port: 1)) == "[2001:db8::2]:1")
    }

    @Test("status counters: the node's, the gauges and discovery's figures")
    func statusCounters() {
        let values = NodeReports.statusCounters(NodeCounters(), paired: 3, active: 2, unauthenticated: 1,
                                                discovery: ["discovery.enabled": 1, "peers.paired": 99])
        #expect(values["peers.paired"] == 3)
        #expect(values["peers.active"] == 2)
        #expect(values["connections.unauthenticated"] == 1)
        #expect(values["discovery.enabled"] == 1)
    }
}
