import Foundation
import MeshCrypto
import MeshLocalAPI
import NIOCore
import Testing
@testable import MeshDaemon

@Suite("Channels between nodes", .serialized)
struct NodeChannelTests {
    /// Two paired nodes with active channels.
    func pairedPair(_ bed: NodeTestBed, bobClockOffset: Int64 = 0,
                    tune: @escaping (inout DaemonConfiguration) -> Void = { _ in }) async throws -> (RunningNode, RunningNode) {
        let alice = try await bed.start(name: "alice", tune: tune)
        let bob = try await bed.start(name: "bob", clockOffsetMilliseconds: bobClockOffset, tune: tune)
        _ = try await bed.pair(alice, bob)
        try await waitUntil("both channels active", timeout: 2) {
            await bothActive(alice, bob)
        }
        return (alice, bob)
    }

    @Test func pingMeasuresBothPaths() async throws {
        let bed = NodeTestBed()
        defer { Task { await bed.shutdown() } }
        let (alice, bob) = try await pairedPair(bed)
        let handshake = await (bob.node.status().counters["handshake.last_initiated_us"] ?? 0)
        print("handshake (bob initiated, message 1 → keys): \(handshake) µs")
        #expect(handshake > 0)
        let report = try await alice.node.ping(deviceID: bob.node.deviceID.short, count: 200)
        #expect(report.paths.map(\.path) == [.datagram, .stream])
        for path in report.paths {
            #expect(path.sent == 200)
            #expect(path.received >= 198, "\(path.path) lost \(path.sent - path.received) probes")
            let p50 = try #require(path.p50Microseconds), p99 = try #require(path.p99Microseconds)
            #expect(p50 <= p99)
            print("ping \(path.path): min \(path.minMicroseconds ?? 0) µs, p50 \(p50) µs, p99 \(p99) µs, max \(path.maxMicroseconds ?? 0) µs")
        }
        await #expect(throws: MeshError.self) { _ = try await alice.node.ping(deviceID: "NOPE", count: 1) }
        await bed.shutdown()
    }

    @Test func aRestartedNodeGetsItsChannelBackQuickly() async throws {
        let bed = NodeTestBed()
        defer { Task { await bed.shutdown() } }
        let (alice, bob) = try await pairedPair(bed)
        await bob.stop()
        try await waitUntil("alice sees the channel drop", timeout: 2) {
            await alice.node.channelState(of: bob.node.deviceID) != .active
        }
        let restartedAt = ContinuousClock.now
        let again = try await bed.start(bed.configuration(name: "bob", stateDirectory: bob.stateDirectory, port: bob.port))
        #expect(again.node.deviceID == bob.node.deviceID)
        try await waitUntil("channel active again", timeout: 3) {
            await bothActive(alice, again)
        }
        print("channel back \(ContinuousClock.now - restartedAt) after the restart")
        let report = try await again.node.ping(deviceID: alice.node.deviceID.description, count: 5)
        #expect(report.paths.allSatisfy { $0.received == 5 })
        await bed.shutdown()
    }

    @Test func unpairClosesBothSides() async throws {
        let bed = NodeTestBed()
        defer { Task { await bed.shutdown() } }
        let (alice, bob) = try await pairedPair(bed)
        try await alice.node.unpair(deviceID: bob.node.deviceID.description)
        #expect(await alice.node.peers().isEmpty)
        try await waitUntil("bob forgets alice", timeout: 2) { await bob.node.peers().isEmpty }
        // Neither side reconnects: the pair keys are gone on both, and the channel's connection
        // is closed on both sides.
        try await waitUntil("both closed the channel's connection", timeout: 2) {
            let aliceOpen = await alice.node.openConnectionCount(), bobOpen = await bob.node.openConnectionCount()
            return aliceOpen == 0 && bobOpen == 0
        }
        let aliceActive = await alice.node.activePeers(), bobActive = await bob.node.activePeers()
        #expect(aliceActive.isEmpty && bobActive.isEmpty)
        let reloaded = try PairedDeviceStore(stateDirectory: bob.stateDirectory).load()
        #expect(reloaded.isEmpty)
        await bed.shutdown()
    }

    @Test func aSkewedClockIsEstimated() async throws {
        let bed = NodeTestBed()
        defer { Task { await bed.shutdown() } }
        let (alice, bob) = try await pairedPair(bed, bobClockOffset: 2500)
        // Keepalives every 100 ms; the lowest-RTT sample wins, so the bound shrinks to the
        // loopback round trip. Wait for a sample whose bound is below 2 ms (a loaded machine
        // can delay the first ones), then check the estimate.
        let estimate = try await eventually("alice's estimate", timeout: 5) { () -> PeerStatus? in
            guard let status = await alice.node.peers().first,
                  let error = status.clockOffsetErrorMilliseconds, error < 2 else { return nil }
            return status
        }
        let offset = try #require(estimate.clockOffsetMilliseconds)
        let error = try #require(estimate.clockOffsetErrorMilliseconds)
        print("estimated offset \(offset) ms ± \(error) ms (true: +2500 ms)")
        #expect(abs(offset - 2500) <= 5)
        let reverse = try await eventually("bob's estimate", timeout: 5) { () -> Double? in
            guard let status = await bob.node.peers().first,
                  let error = status.clockOffsetErrorMilliseconds, error < 2 else { return nil }
            return status.clockOffsetMilliseconds
        }
        #expect(abs(reverse + 2500) <= 5)
        await bed.shutdown()
    }

    @Test func simultaneousConnectsLeaveExactlyOneChannel() async throws {
        let bed = NodeTestBed()
        defer { Task { await bed.shutdown() } }
        var (alice, bob) = try await pairedPair(bed)
        for round in 1...4 {
            await alice.stop()
            await bob.stop()
            // Both come back at once and dial each other at once.
            let aliceConfiguration = bed.configuration(name: "alice", stateDirectory: alice.stateDirectory, port: alice.port)
            let bobConfiguration = bed.configuration(name: "bob", stateDirectory: bob.stateDirectory, port: bob.port)
            async let a = bed.start(aliceConfiguration)
            async let b = bed.start(bobConfiguration)
            (alice, bob) = try await (a, b)
            try await waitUntil("round \(round): both active", timeout: 3) {
                await bothActive(alice, bob)
            }
            // The connection that lost the simultaneous-connect race closes on both sides.
            try await waitUntil("round \(round): one connection left on each side", timeout: 3) {
                let aliceOpen = await alice.node.openConnectionCount(), bobOpen = await bob.node.openConnectionCount()
                return aliceOpen == 1 && bobOpen == 1
            }
            let aliceEnds = try #require(await alice.node.channelConnectionEndpoints(bob.node.deviceID))
            let bobEnds = try #require(await bob.node.channelConnectionEndpoints(alice.node.deviceID))
            #expect(aliceEnds.local == bobEnds.remote && aliceEnds.remote == bobEnds.local,
                    "round \(round): both sides must use the same TCP connection")
            let aliceOpen = await alice.node.openConnectionCount(), bobOpen = await bob.node.openConnectionCount()
            #expect(aliceOpen == 1 && bobOpen == 1, "round \(round): no second connection survives")
        }
        await bed.shutdown()
    }

    @Test func rekeyKeepsTheChannelUp() async throws {
        let bed = NodeTestBed()
        defer { Task { await bed.shutdown() } }
        let (alice, bob) = try await pairedPair(bed) { configuration in
            configuration.channelTuning.rekeyAfter = 0.3
            configuration.channelTuning.rejectAfter = 5
        }
        try await waitUntil("three rekeys", timeout: 5) {
            let total = await (alice.node.status().counters["rekeys.completed"] ?? 0)
                + (bob.node.status().counters["rekeys.completed"] ?? 0)
            return total >= 6
        }
        let report = try await alice.node.ping(deviceID: bob.node.deviceID.description, count: 20)
        #expect(report.paths.allSatisfy { $0.received == 20 })
        #expect(await alice.node.status().counters["handshakes.completed"] == 1)
        #expect(await alice.node.status().counters["channels.expired"] == 0)
        await bed.shutdown()
    }

    @Test func applicationMessagesFlowOverBothPaths() async throws {
        let bed = NodeTestBed()
        defer { Task { await bed.shutdown() } }
        let (alice, bob) = try await pairedPair(bed)
        var inbound = await bob.node.recordInbound().messages.makeAsyncIterator()
        try await alice.node.send(Array("over udp".utf8), to: bob.node.deviceID, path: .datagram)
        try await alice.node.send(Array(repeating: 0xAB, count: 200_000), to: bob.node.deviceID, path: .stream)
        var received: [InboundChannelMessage] = []
        for _ in 0..<2 { if let message = await inbound.next() { received.append(message) } }
        #expect(received.contains(InboundChannelMessage(peer: alice.node.deviceID, path: .datagram, bytes: Array("over udp".utf8))))
        #expect(received.contains(InboundChannelMessage(peer: alice.node.deviceID, path: .stream,
                                                        bytes: Array(repeating: 0xAB, count: 200_000))))
        await #expect(throws: ChannelSendError(code: .tooLargeForDatagram)) {
            try await alice.node.send(Array(repeating: 0, count: 2000), to: bob.node.deviceID, path: .datagram)
        }
        await bed.shutdown()
    }

    /// The delivery router's reliable pump sends on the connection its in-flight items took: a
    /// send bound to another connection (the channel moved) is refused and sends nothing.
    @Test func aStreamSendBoundToAnotherConnectionIsRefusedAndSendsNothing() async throws {
        let bed = NodeTestBed()
        defer { Task { await bed.shutdown() } }
        let (alice, bob) = try await pairedPair(bed)
        let current = try #require(await alice.node.streamConnection(of: bob.node.deviceID))
        await #expect(throws: ChannelSendError(code: .notActive)) {
            try await alice.node.send(Array("stale".utf8), to: bob.node.deviceID, path: .stream, connection: current &+ 1)
        }
        try await alice.node.send(Array("current".utf8), to: bob.node.deviceID, path: .stream, connection: current)
        var inbound = await bob.node.recordInbound().messages.makeAsyncIterator()
        let first = await inbound.next()
        #expect(first?.bytes == Array("current".utf8), "the refused message never went out")
        await bed.shutdown()
    }
}

@Suite("Several nodes", .serialized)
struct NodeMeshTests {
    /// With the device set off (the bed's default), pairings are pairwise and an unpair is
    /// between two devices only (`DeviceSetProcessTests` tests the set's own rules).
    @Test func threeNodesPairPairwiseAndAllChannelsComeUpWithTheDeviceSetOff() async throws {
        let bed = NodeTestBed()
        defer { Task { await bed.shutdown() } }
        let a = try await bed.start(name: "a"), b = try await bed.start(name: "b"), c = try await bed.start(name: "c")
        _ = try await bed.pair(a, b)
        _ = try await bed.pair(a, c)
        _ = try await bed.pair(c, b)
        try await waitUntil("all three channels active", timeout: 3) {
            let ab = await bothActive(a, b), ac = await bothActive(a, c), bc = await bothActive(b, c)
            return ab && ac && bc
        }
        for node in [a, b, c] {
            let peers = await node.node.peers()
            #expect(peers.count == 2 && peers.allSatisfy { $0.channel == .active && $0.reachable })
        }
        var events = await c.node.recordInbound().events.makeAsyncIterator()
        try await a.node.unpair(deviceID: c.node.deviceID.short)
        var sawUnpaired = false
        for _ in 0..<32 {
            if case .unpaired(let peer)? = await events.next(), peer == a.node.deviceID { sawUnpaired = true; break }
        }
        #expect(sawUnpaired)
        let ab = await bothActive(a, b), bc = await bothActive(b, c)
        #expect(ab && bc)
        await bed.shutdown()
    }
}

@Suite("Channel without UDP", .serialized)
struct NodeStreamFallbackTests {
    @Test func theChannelSurvivesWhenDatagramsAreLost() async throws {
        let bed = NodeTestBed()
        defer { Task { await bed.shutdown() } }
        let alice = try await bed.start(name: "alice")
        let bob = try await bed.start(name: "bob")
        _ = try await bed.pair(alice, bob)
        try await waitUntil("both channels active", timeout: 2) { await bothActive(alice, bob) }
        // From now on neither side receives a datagram.
        await alice.node.ignoreDatagramsForTesting(true)
        await bob.node.ignoreDatagramsForTesting(true)
        let before = await alice.node.status().counters["datagrams.received"] ?? 0
        let streamBefore = await alice.node.status().counters["stream.messages_received"] ?? 0
        // The lease (2 s in tests) runs down; just before it would expire each side asks over
        // the stream and the other answers there: two such rounds (4 stream messages in at
        // alice) carry the channel past a whole lease without a datagram.
        try await waitUntil("two lease renewals over the stream", timeout: 10) {
            await alice.node.status().counters["stream.messages_received"] ?? 0 >= streamBefore + 4
        }
        #expect(await bothActive(alice, bob))
        #expect(await alice.node.status().counters["leases.expired"] == 0)
        #expect(await alice.node.status().counters["datagrams.received"] == before)
        let report = try await alice.node.ping(deviceID: bob.node.deviceID.description, count: 1)
        #expect(report.paths.first { $0.path == .stream }?.received == 1)
        #expect(report.paths.first { $0.path == .datagram }?.received == 0)
        await bed.shutdown()
    }
}
