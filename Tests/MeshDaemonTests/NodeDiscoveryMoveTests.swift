import Foundation
import MeshCore
import MeshCrypto
@testable import MeshDaemon
import MeshDiscovery
import Synchronization
import Testing

/// mDNS is unauthenticated: what it says about a paired device's address makes the node try
/// that address next to the live channel, and the channel switches only to a connection that
/// authenticated. A spoofed goodbye or a spoofed address never closes a working channel.
@Suite("Node discovery: moves never tear down a channel", .serialized)
struct NodeDiscoveryMoveTests {
    /// Two paired nodes with a fake discovery each and an active channel; `watcher` is the one
    /// whose discovery the test drives: the preferred initiator of the pair when
    /// `watcherPreferred`, else the other (the preferred side's new connection replaces the
    /// channel; the other side's is refused by a peer that holds a channel it initiated).
    func pairedNodes(_ bed: NodeTestBed, watcherPreferred: Bool)
        async throws -> (watcher: RunningNode, watcherDiscovery: FakePeerDiscovery, other: RunningNode) {
        let discoveries = [FakePeerDiscovery(), FakePeerDiscovery()]
        let one = try await bed.start(bed.configuration(name: "one", stateDirectory: bed.temporaryFolder()), discovery: discoveries[0])
        let two = try await bed.start(bed.configuration(name: "two", stateDirectory: bed.temporaryFolder()), discovery: discoveries[1])
        _ = try await bed.pair(one, two)
        try await waitUntil("first channel", timeout: 5) { await bothActive(one, two) }
        let onePreferred = SimultaneousConnectRule.localSideIsPreferred(localKey: one.node.identity.keyPair.publicKey,
                                                                        peerKey: two.node.identity.keyPair.publicKey)
        return onePreferred == watcherPreferred ? (one, discoveries[0], two) : (two, discoveries[1], one)
    }

    /// Sends a numbered message over the stream path every 10 ms until stopped; the receiver
    /// collects them. Returns (sent, refused sends).
    final class Traffic: Sendable {
        let sent = Locked<[UInt32]>([])
        let refused = Locked(0)
        let received = Locked<[UInt32]>([])
        let stopFlag = Atomic<Bool>(false)

        func run(from sender: RunningNode, to receiver: RunningNode) -> (Task<Void, Never>, Task<Void, Never>) {
            let peer = receiver.node.deviceID
            let sending = Task {
                var n: UInt32 = 0
                while !stopFlag.load(ordering: .relaxed), n < 3000 {
                    n += 1
                    do {
                        try await sender.node.send(withUnsafeBytes(of: n.bigEndian) { Array($0) }, to: peer, path: .stream)
                        sent.withLock { $0.append(n) }
                    } catch {
                        refused.withLock { $0 += 1 }
                    }
                    try? await Task.sleep(for: .milliseconds(10))
                }
            }
            let receiving = Task {
                for await message in await receiver.node.recordInbound().messages where message.bytes.count == 4 {
                    let n = message.bytes.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
                    received.withLock { $0.append(n) }
                }
            }
            return (sending, receiving)
        }
    }

    @Test("a spoofed goodbye for the channel's address plus spoofed addresses: the channel stays, traffic keeps flowing")
    func spoofedGoodbyeKeepsTheChannel() async throws {
        let bed = NodeTestBed()
        defer { Task { await bed.shutdown() } }
        // The preferred side: its probe would replace the channel if the spoof could authenticate.
        let (alice, discovery, bob) = try await pairedNodes(bed, watcherPreferred: true)
        let bobID = bob.node.deviceID
        discovery.announce(name: "bob", deviceID: bobID.description, host: "127.0.0.1", port: bob.port)
        try await waitUntil("bob found over mDNS", timeout: 3) {
            await alice.node.status().counters["discovery.paired_found"] == 1
        }
        let indexBefore = try #require(await alice.node.currentLocalIndex(of: bobID))
        let traffic = Traffic()
        let (sending, receiving) = traffic.run(from: alice, to: bob)
        try await waitUntil("traffic flowing", timeout: 3) { traffic.received.withLock { $0.count } >= 20 }

        // A stranger's daemon behind another address (it answers TCP, but holds no pair key),
        // and an address where nothing listens, both claiming to be bob…
        let mallory = try await bed.start(name: "mallory")
        let relay = try await LoopbackRelay.start(on: "127.0.0.3", to: mallory.port, group: bed.group)
        defer { Task { await relay.stop() } }
        discovery.announce(name: "bob-spoof-1", deviceID: bobID.description, host: "127.0.0.3", port: relay.port)
        discovery.announce(name: "bob-spoof-2", deviceID: bobID.description, host: "127.0.0.4", port: 9)
        // …then a goodbye for bob's real record: mDNS now says bob is only at the spoofed addresses.
        discovery.emit(.removed(instanceName: "bob", source: .mdns))
        try await waitUntil("both spoofed addresses tried and refused", timeout: 10) {
            await alice.node.status().counters["discovery.move_probes_failed_total"] ?? 0 >= 1
        }
        let sentBeforeCheck = traffic.sent.withLock { $0.count }
        try await waitUntil("traffic still flowing after the spoof", timeout: 3) {
            traffic.received.withLock { $0.count } >= sentBeforeCheck + 20
        }
        traffic.stopFlag.store(true, ordering: .relaxed)
        await sending.value
        try await waitUntil("every sent message arrived", timeout: 3) {
            traffic.received.withLock { $0.count } == traffic.sent.withLock { $0.count }
        }
        receiving.cancel()
        let sent = traffic.sent.withLock { $0 }
        #expect(traffic.refused.withLock { $0 } == 0, "no send found the channel down")
        #expect(traffic.received.withLock { $0 } == sent, "every message arrived once, in order")
        #expect(await alice.node.currentLocalIndex(of: bobID) == indexBefore, "the same channel (no new handshake)")
        let counters = await alice.node.status().counters
        #expect(counters["discovery.moves_total"] == 0)
        #expect(counters["discovery.move_probes_total"] == 1)
        #expect(await mallory.node.peers().isEmpty)
        print("node discovery: \(sent.count) messages over the channel across a spoofed goodbye, none lost")
        await bed.shutdown()
    }

    @Test("the paired device really answers at the new address: the channel switches there once that handshake authenticated")
    func realMoveSwitchesAfterAuthentication() async throws {
        let bed = NodeTestBed()
        defer { Task { await bed.shutdown() } }
        let (alice, discovery, bob) = try await pairedNodes(bed, watcherPreferred: true)
        let bobID = bob.node.deviceID
        discovery.announce(name: "bob", deviceID: bobID.description, host: "127.0.0.1", port: bob.port)
        try await waitUntil("bob found over mDNS", timeout: 3) {
            await alice.node.status().counters["discovery.paired_found"] == 1
        }
        let indexBefore = try #require(await alice.node.currentLocalIndex(of: bobID))
        let traffic = Traffic()
        let (sending, receiving) = traffic.run(from: alice, to: bob)
        try await waitUntil("traffic flowing", timeout: 3) { traffic.received.withLock { $0.count } >= 20 }

        // Bob is reachable at 127.0.0.2 now (a relay to its port) and says so; its old record goes.
        let relay = try await LoopbackRelay.start(on: "127.0.0.2", to: bob.port, group: bed.group)
        defer { Task { await relay.stop() } }
        discovery.announce(name: "bob-moved", deviceID: bobID.description, host: "127.0.0.2", port: relay.port)
        discovery.emit(.removed(instanceName: "bob", source: .mdns))
        try await waitUntil("the channel runs over the new address", timeout: 10) {
            await alice.node.channelConnectionEndpoints(bobID)?.remote?.ipAddress == "127.0.0.2"
        }
        #expect(await alice.node.currentLocalIndex(of: bobID) != indexBefore, "a new handshake")
        #expect(await alice.node.status().counters["discovery.moves_total"] == 1)
        let sentBeforeCheck = traffic.sent.withLock { $0.count }
        try await waitUntil("traffic flowing over the new connection", timeout: 3) {
            traffic.received.withLock { $0.count } >= sentBeforeCheck + 20
        }
        traffic.stopFlag.store(true, ordering: .relaxed)
        await sending.value
        receiving.cancel()
        // Messages handed to the old connection just before the switch may be lost with it
        // (stream sends are in order while a connection lives); none is refused, none repeated.
        #expect(traffic.refused.withLock { $0 } == 0, "no send found the channel down")
        let received = traffic.received.withLock { $0 }
        #expect(received == received.sorted() && Set(received).count == received.count)
        await bed.shutdown()
    }
}
