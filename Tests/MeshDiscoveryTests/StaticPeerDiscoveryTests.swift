import Logging
import Testing
import MeshDiscovery

@Suite("Static and merged discovery")
struct StaticPeerDiscoveryTests {
    private let logger = Logger(label: "test")

    @Test("HOST:PORT forms parse, with the right family", arguments: [
        ("198.18.0.7:47470", "198.18.0.7", UInt16(47_470), DiscoveredAddress.Family.ipv4),
        ("[2001:2::7]:9", "2001:2::7", 9, .ipv6),
        ("peer.example:1", "peer.example", 1, .hostName),
    ])
    func parsing(text: String, host: String, port: UInt16, family: DiscoveredAddress.Family) throws {
        let peer = try StaticPeer(parsing: text)
        #expect(peer.host == host)
        #expect(peer.port == port)
        #expect(peer.family == family)
        #expect(peer.description == text)
    }

    @Test("malformed peers are refused", arguments: ["", "host", "host:", "host:0", "host:70000", "::1:80", "[::1]80", ":80", "a b:1"])
    func malformed(text: String) {
        #expect(throws: DiscoveryError.self) { _ = try StaticPeer(parsing: text) }
    }

    @Test("start reports every peer as resolved, from the static source")
    func reportsPeers() async throws {
        let discovery = StaticPeerDiscovery(peers: [try StaticPeer(parsing: "198.18.0.2:7000", name: "b"),
                                                    try StaticPeer(parsing: "[2001:2::3]:7000", name: "c")], logger: logger)
        let events = discovery.events()
        try await discovery.start(advertising: nil)
        await discovery.stop()
        var seen: [DiscoveryEvent] = []
        for await event in events { seen.append(event) }
        #expect(seen.count == 2)
        guard case .resolved(let b) = seen.first else { Issue.record("expected resolved"); return }
        #expect(b.instanceName == "b")
        #expect(b.source == .staticConfiguration)
        #expect(b.addresses == [DiscoveredAddress(host: "198.18.0.2", port: 7000, family: .ipv4)])
    }

    @Test("a late subscriber gets the current peers replayed; a reload reports the difference")
    func replayAndReload() async throws {
        let discovery = StaticPeerDiscovery(peers: [StaticPeer(host: "198.18.0.2", port: 1, name: "b")], logger: logger)
        try await discovery.start(advertising: nil)
        let events = discovery.events()
        discovery.setPeers([StaticPeer(host: "198.18.0.3", port: 1, name: "c")])
        await discovery.stop()
        var seen: [String] = []
        for await event in events {
            switch event {
            case .resolved(let s): seen.append("+\(s.instanceName)")
            case .removed(let name, _): seen.append("-\(name)")
            default: seen.append("?")
            }
        }
        #expect(seen == ["+b", "-b", "+c"])
    }

    @Test("starting twice is an error a caller can act on")
    func startTwice() async throws {
        let discovery = StaticPeerDiscovery(peers: [], logger: logger)
        try await discovery.start(advertising: nil)
        await #expect(throws: DiscoveryError.self) { try await discovery.start(advertising: nil) }
        await discovery.stop()
    }

    @Test("merged discovery delivers the events of all members and finishes after stop")
    func merged() async throws {
        let one = StaticPeerDiscovery(peers: [StaticPeer(host: "198.18.0.2", port: 1, name: "b")], logger: logger)
        let two = StaticPeerDiscovery(peers: [StaticPeer(host: "198.18.0.3", port: 1, name: "c")], logger: logger)
        let merged = MergedPeerDiscovery([one, two])
        let events = merged.events()
        try await merged.start(advertising: nil)
        await merged.stop()
        var names: Set<String> = []
        for await event in events {
            if case .resolved(let s) = event { names.insert(s.instanceName) }
        }
        #expect(names == ["b", "c"])
    }
}
