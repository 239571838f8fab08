import Foundation
import MeshCore
import MeshLocalAPI
import Testing

/// `meshctl status` and `meshctl peers` as a person reads them, against a real server with a
/// fake control plane whose counters and peers each test sets.
@Suite("meshctl status and peers", .enabled(if: ChildProcess.executable("meshctl") != nil, "meshctl is not built"))
struct MeshctlStatusTests {
    /// Runs meshctl against the test server; returns its exit status and stdout lines.
    private func meshctl(_ test: TestServer, _ arguments: [String]) async throws -> (status: Int32, lines: [String]) {
        let process = try ChildProcess("meshctl", ["--socket", test.socketPath] + arguments)
        var lines: [String] = []
        while let line = try await process.readLine() { lines.append(line) }
        return (try await process.exitStatus(), lines)
    }

    /// The text after the label of the summary line starting with `label`.
    private func value(_ lines: [String], _ label: String) -> String? {
        lines.first { $0.hasPrefix(label + " ") }.map { String($0.dropFirst(label.count)).trimmingCharacters(in: .whitespaces) }
    }

    static let troubled: [String: UInt64] = [
        "discovery.enabled": 1, "discovery.mdns_available": 0, "discovery.mdns_outages_total": 1,
        "handshakes.failed": 2, "datagrams.rejected": 0, "datagrams.sent": 500, "delivery.store_errors": 4,
    ]

    @Test func statusSaysWhoWhereDiscoveryDevicesAndWarningsInWords() async throws {
        try await withTestServer { test in
            await test.controlPlane.setCounters(Self.troubled)
            let (status, lines) = try await meshctl(test, ["status"])
            #expect(status == 0)
            #expect(value(lines, "device") == "fake (ZZZZZZZ-YYYYYYY-XXXXXXX-WWWWWWW)")
            #expect(value(lines, "daemon") == "meshd \(SessionMeshVersion.current)")
            #expect(value(lines, "listening") == "127.0.0.1:47470 (UDP and TCP)")
            #expect(value(lines, "discovery") == "Avahi not available: discovery off, static peers only")
            #expect(value(lines, "devices") == "1 paired, 1 active (laptop)")
            // The fake serves no data operations: the summary says it could not tell.
            #expect(value(lines, "queued")?.hasPrefix("unknown") == true)
            let warnings = lines.drop { !$0.hasPrefix("warnings") }
            #expect(warnings.contains { $0.contains("1 time(s) Avahi became unavailable") })
            #expect(warnings.contains { $0.contains("2 handshake(s) failed") })
            #expect(warnings.contains { $0.contains("4 store error(s)") })
            #expect(!warnings.contains { $0.contains("datagram(s) failed") }, "a zero counter is no warning")
            // Counters are behind --counters.
            #expect(!lines.contains { $0.contains("datagrams.sent") })
        }
    }

    @Test func countersAreListedOnlyWithTheFlag() async throws {
        try await withTestServer { test in
            await test.controlPlane.setCounters(Self.troubled)
            let (status, lines) = try await meshctl(test, ["status", "--counters"])
            #expect(status == 0)
            #expect(lines.contains("counters"))
            #expect(lines.contains { $0.hasPrefix("  datagrams.sent") && $0.hasSuffix(" 500") })
            #expect(lines.count >= Self.troubled.count + 8)
        }
    }

    @Test func statusJSONIsTheDaemonsStatusObject() async throws {
        try await withTestServer { test in
            await test.controlPlane.setCounters(Self.troubled)
            let (status, lines) = try await meshctl(test, ["status", "--json"])
            #expect(status == 0)
            let object = try #require(try JSONSerialization.jsonObject(with: Data(lines.joined().utf8)) as? [String: Any])
            #expect(Set(object.keys) == ["deviceID", "name", "listen", "socket", "uptimeSeconds", "counters", "version"])
            #expect(object["version"] as? String == SessionMeshVersion.current)
            #expect(object["counters"] as? [String: UInt64] == Self.troubled)
        }
    }

    @Test(arguments: [
        (["discovery.enabled": 1, "discovery.mdns_available": 1, "discovery.mdns_published": 1, "discovery.paired_found": 1],
         "mDNS via Avahi, published; 1 paired device found on the network"),
        (["discovery.enabled": 1, "discovery.mdns_available": 0, "discovery.mdns_outages_total": 0],
         "mDNS off (listening on loopback): static peers only"),
        (["discovery.enabled": 0], "off: static peers only"),
    ] as [([String: UInt64], String)])
    func discoveryStateInWords(counters: [String: UInt64], expected: String) async throws {
        try await withTestServer { test in
            await test.controlPlane.setCounters(counters)
            let (_, lines) = try await meshctl(test, ["status"])
            #expect(value(lines, "discovery") == expected)
            #expect(value(lines, "warnings") == "none since the daemon started")
        }
    }

    @Test func peersIsATableOfNameIDChannelPathLastSeenAndRTT() async throws {
        try await withTestServer { test in
            let now = Date().timeIntervalSince1970
            await test.controlPlane.setPeers([
                PeerStatus(deviceID: "AAAAAAA-BBBBBBB-CCCCCCC-DDDDDDD", name: "laptop",
                           addresses: [PeerAddress(address: "198.18.0.2:47470", source: .mdns)], channel: .active,
                           rttMilliseconds: 0.35, leaseExpires: now + 2, reachable: true,
                           lastSeen: now - 125, path: "198.18.0.2:47470", joined: "paired here"),
                PeerStatus(deviceID: "EEEEEEE-FFFFFFF-GGGGGGG-HHHHHHH", name: "phone",
                           addresses: [PeerAddress(address: "10.0.0.9:47470", source: .pairing)], channel: .down),
            ])
            let (status, lines) = try await meshctl(test, ["peers"])
            #expect(status == 0)
            try #require(lines.count == 3, "\(lines)")
            #expect(lines[0].split(separator: " ", omittingEmptySubsequences: true)
                        == ["NAME", "DEVICE", "CHANNEL", "PATH", "LAST", "SEEN", "RTT", "JOINED"])
            let laptop = lines[1]
            #expect(laptop.hasPrefix("laptop") && laptop.contains("AAAAAAA") && laptop.contains(" active "))
            #expect(laptop.contains("198.18.0.2:47470 (mdns)"))
            #expect(laptop.contains("2m 0") && laptop.contains("s ago"), "\(laptop)")
            #expect(laptop.contains("0.35 ms") && laptop.hasSuffix("paired here"), "\(laptop)")
            let phone = lines[2].split(separator: " ", omittingEmptySubsequences: true)
            #expect(phone.prefix(4) == ["phone", "EEEEEEE", "down", "-"])
            #expect(lines[2].contains("not since start") && lines[2].hasSuffix("-"))
            // Columns line up: every row's CHANNEL starts where the header's does.
            let column = try #require(lines[0].range(of: "CHANNEL")).lowerBound.utf16Offset(in: lines[0])
            #expect(lines.dropFirst().allSatisfy { $0.utf16.dropFirst(column).starts(with: "active".utf16) || $0.utf16.dropFirst(column).starts(with: "down".utf16) })
        }
    }

    @Test func peersWideAddsClockOffsetLeaseAndAddresses() async throws {
        try await withTestServer { test in
            let (status, lines) = try await meshctl(test, ["peers", "--wide"])
            #expect(status == 0)
            let header = try #require(lines.first)
            #expect(header.contains("RTT") && header.contains("CLOCK OFFSET") && header.hasSuffix("ADDRESSES"))
            #expect(lines.dropFirst().first?.contains("+2500.20 ± 0.04 ms") == true)
            #expect(lines.dropFirst().first?.hasSuffix("127.0.0.1:47002 (pairing)") == true)
        }
    }
}
