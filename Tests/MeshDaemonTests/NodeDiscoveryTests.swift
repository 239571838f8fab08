import Foundation
import MeshCrypto
import MeshDiscovery
import MeshLocalAPI
import Testing
@testable import MeshDaemon

/// The node with discovery injected (a fake): addresses of paired devices from discovery are
/// dialled, the pairing hint is advertised, and pairing works by code alone. The real Avahi
/// path is covered by the namespace lab (Tests/MeshDiscoveryTests/Lab/MeshdLabTests.swift).
@Suite("Node discovery")
struct NodeDiscoveryTests {
    @Test("a paired device whose stored addresses are stale is found through discovery and connected")
    func discoveredAddressConnects() async throws {
        let bed = NodeTestBed()
        defer { Task { await bed.shutdown() } }
        let aliceConfiguration = bed.configuration(name: "alice", stateDirectory: bed.temporaryFolder())
        let bobConfiguration = bed.configuration(name: "bob", stateDirectory: bed.temporaryFolder())
        var alice = try await bed.start(aliceConfiguration)
        var bob = try await bed.start(bobConfiguration)
        _ = try await bed.pair(alice, bob)
        try await waitUntil("first channel", timeout: 5) { await bothActive(alice, bob) }
        await alice.stop()
        await bob.stop()

        // Both come back on new ports: every stored address is stale.
        let aliceDiscovery = FakePeerDiscovery()
        let bobDiscovery = FakePeerDiscovery()
        alice = try await bed.start(aliceConfiguration, discovery: aliceDiscovery)
        bob = try await bed.start(bobConfiguration, discovery: bobDiscovery)
        // Alice dials bob's stored (stale) address, fails and waits: no channel.
        try await waitUntil("alice gave up on bob's stale address", timeout: 5) {
            await alice.node.channelState(of: bob.node.deviceID) == .down
        }
        #expect(await alice.node.channelState(of: bob.node.deviceID) != .active)

        // Someone else's service and a future protocol version are never dialled.
        aliceDiscovery.announce(name: "stranger", deviceID: "ZZZZZZZZ-ZZZZ", port: 9)
        aliceDiscovery.announce(name: "bob-v2", deviceID: bob.node.deviceID.description, port: 9, version: 2)
        let announced = ContinuousClock.now
        aliceDiscovery.announce(name: "bob", deviceID: bob.node.deviceID.description, port: bob.port)
        try await waitUntil("channel over the discovered address", timeout: 5) { await bothActive(alice, bob) }
        print("node discovery: channel active \(ContinuousClock.now - announced) after the announcement")

        let shown = try #require(await alice.node.peers().first)
        #expect(shown.addresses.first == PeerAddress(address: "127.0.0.1:\(bob.port)", source: .mdns))
        let status = await alice.node.status()
        #expect(status.counters["discovery.paired_found"] == 1)
        #expect(status.counters["discovery.mdns_services"] == 3)

        // The node advertises its bound port and device-ID hint, and stops discovery with itself.
        let advertised = try #require(aliceDiscovery.advertisements.first ?? nil)
        #expect(advertised.port == UInt16(alice.port))
        #expect(advertised.deviceIDHint == DiscoveryAdvertisement.deviceIDHint(for: alice.node.deviceID.description))
        #expect(advertised.pairingHint == nil)
        await alice.stop()
        #expect(aliceDiscovery.isStopped)
        await bed.shutdown()
    }

    @Test("with mDNS off, a static peer address that reaches a paired device is shown as static")
    func staticPeerShownAsStatic() async throws {
        let bed = NodeTestBed()
        defer { Task { await bed.shutdown() } }
        let aliceConfiguration = bed.configuration(name: "alice", stateDirectory: bed.temporaryFolder())
        let bobConfiguration = bed.configuration(name: "bob", stateDirectory: bed.temporaryFolder())
        var alice = try await bed.start(aliceConfiguration)
        var bob = try await bed.start(bobConfiguration)
        _ = try await bed.pair(alice, bob)
        try await waitUntil("first channel", timeout: 5) { await bothActive(alice, bob) }
        await alice.stop()
        await bob.stop()

        // Bob comes back on a new port; only Alice's static list knows it.
        bob = try await bed.start(bobConfiguration)
        var staticConfiguration = aliceConfiguration
        staticConfiguration.mdns = false
        staticConfiguration.staticPeers = [.init(host: "127.0.0.1", port: bob.port)]
        let discovery = MeshNode.defaultDiscovery(for: staticConfiguration, logger: NodeTestBed.logger("alice"))
        #expect(discovery is StaticPeerDiscovery)
        // mDNS on, but listening on loopback: still no Avahi (nothing to announce to the network).
        var loopback = staticConfiguration
        loopback.mdns = true
        #expect(MeshNode.defaultDiscovery(for: loopback, logger: NodeTestBed.logger("alice")) is StaticPeerDiscovery)
        loopback.listen = .init(host: "0.0.0.0", port: 0)
        #expect(MeshNode.defaultDiscovery(for: loopback, logger: NodeTestBed.logger("alice")) is MergedPeerDiscovery)
        alice = try await bed.start(staticConfiguration, discovery: discovery)
        try await waitUntil("channel over the static address", timeout: 5) { await bothActive(alice, bob) }
        let shown = try #require(await alice.node.peers().first)
        #expect(shown.addresses.contains(PeerAddress(address: "127.0.0.1:\(bob.port)", source: .static)))
        #expect(await alice.node.status().counters["discovery.mdns_available"] == 0)
        await bed.shutdown()
    }

    @Test("pairing by code alone: the inviter advertises the public hint, the joiner finds it and pairs")
    func pairByCodeAlone() async throws {
        let bed = NodeTestBed()
        defer { Task { await bed.shutdown() } }
        let inviterDiscovery = FakePeerDiscovery()
        let joinerDiscovery = FakePeerDiscovery()
        let inviter = try await bed.start(bed.configuration(name: "inviter", stateDirectory: bed.temporaryFolder()),
                                          discovery: inviterDiscovery)
        let joiner = try await bed.start(bed.configuration(name: "joiner", stateDirectory: bed.temporaryFolder()),
                                         discovery: joinerDiscovery)
        let invitation = try await inviter.node.createPairingCode(validFor: 60)
        let hint = try PairingCode.parse(invitation.code).publicHint
        #expect(invitation.code.hasPrefix(hint))
        try await waitUntil("pairing hint advertised", timeout: 2) {
            inviterDiscovery.advertisements.last??.pairingHint == hint
        }

        // Another inviter with another hint is listed too; it must not be contacted.
        let decoyHint = hint == "ZZ" ? "YY" : "ZZ"
        joinerDiscovery.announce(name: "decoy", deviceID: "DDDDDDDD", pairingHint: decoyHint, port: 9)
        joinerDiscovery.announce(name: "inviter", deviceID: inviter.node.deviceID.description, pairingHint: hint,
                                 port: inviter.port)
        async let invited = inviter.node.awaitPairing(code: invitation.code)
        let joined = try await joiner.node.joinPairing(code: invitation.code.lowercased(), address: nil)
        #expect(joined.deviceID == inviter.node.deviceID.description)
        #expect(try await invited.verification == joined.verification)
        try await waitUntil("channel after pairing", timeout: 5) { await bothActive(inviter, joiner) }
        // The code is used up: the hint disappears from the advertisement.
        try await waitUntil("pairing hint withdrawn", timeout: 2) {
            inviterDiscovery.advertisements.last??.pairingHint == nil
        }
        await bed.shutdown()
    }

    @Test("pairing by code alone with no inviter on the network fails with a clear error within seconds")
    func pairByCodeAloneWithoutInviter() async throws {
        let bed = NodeTestBed()
        defer { Task { await bed.shutdown() } }
        let discovery = FakePeerDiscovery()
        let joiner = try await bed.start(bed.configuration(name: "joiner", stateDirectory: bed.temporaryFolder()),
                                         discovery: discovery)
        let code = PairingCode.generate()
        discovery.announce(name: "other", deviceID: "DDDDDDDD", pairingHint: code.publicHint == "ZZ" ? "YY" : "ZZ", port: 9)
        let started = ContinuousClock.now
        let error = await #expect(throws: MeshError.self) {
            _ = try await joiner.node.joinPairing(code: code.description, address: nil)
        }
        #expect(error?.code == "inviter-not-found")
        #expect(error?.message.contains("--address") == true)
        #expect(ContinuousClock.now - started < .seconds(8))

        // Without discovery the daemon says so at once.
        let plain = try await bed.start(name: "plain")
        let off = await #expect(throws: MeshError.self) {
            _ = try await plain.node.joinPairing(code: code.description, address: nil)
        }
        #expect(off?.code == "discovery-off")
        await bed.shutdown()
    }
}
