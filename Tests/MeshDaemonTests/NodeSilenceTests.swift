import Foundation
import MeshCrypto
import MeshLocalAPI
import Testing
@testable import MeshDaemon

@Suite("Silence towards unpaired sources", .serialized)
struct NodeSilenceTests {
    @Test func anUnpairedNodeGetsNoChannelAndNoReplyBytes() async throws {
        let bed = NodeTestBed()
        defer { Task { await bed.shutdown() } }
        let alice = try await bed.start(name: "alice")
        let bob = try await bed.start(name: "bob")
        _ = try await bed.pair(alice, bob)
        try await waitUntil("paired channel active", timeout: 2) { await alice.node.activePeers().count == 1 }
        // A third node that knows alice's address and public key but was never paired.
        let mallory = try await bed.start(name: "mallory") { $0.staticPeers = [.init(host: "127.0.0.1", port: 1)] }
        let stranger = X25519KeyPair.generate()
        let (_, bogusHandshake) = try ChannelHandshake.initiate(
            localStatic: stranger, peerPublicKey: alice.node.identity.keyPair.publicKey,
            pairKey: SecretBytes.random(count: 32),
            payload: HandshakePayload(sessionIndex: 1, udpPort: 1, wallNanoseconds: 1, isRekey: false))
        let probes: [(String, [UInt8])] = [
            ("garbage", Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8)),
            ("preamble only", ConnectionKind.channel.preamble),
            ("bad version", [0x53, 0x4D, 9, 1, 0, 1, 0]),
            ("handshake from an unpaired key", ConnectionKind.channel.preamble + (try WireFrame.encode(HandshakeMac.append(
                to: bogusHandshake, key: HandshakeMac.key(pairKey: SecretBytes.random(count: 32),
                                                          responderPublicKey: alice.node.identity.keyPair.publicKey))))),
            ("handshake without its MAC", ConnectionKind.channel.preamble + (try WireFrame.encode(bogusHandshake))),
            ("random handshake bytes", ConnectionKind.channel.preamble + (try WireFrame.encode(Array(repeating: 7, count: 96)))),
            ("pairing with no live code", ConnectionKind.pairing.preamble + (try WireFrame.encode([1, 2, 3]))),
        ]
        for (name, bytes) in probes {
            let port = alice.port
            let reply = await offPool { RawSocketProbe.tcpReplyBytes(port: port, sending: bytes, waitMilliseconds: 300) }
            #expect(reply == 0, "\(name): \(reply) reply bytes")
        }
        let datagrams: [[UInt8]] = [
            Array("hello?".utf8),
            DatagramHeader(receiverIndex: 12345).bytes + Array(repeating: 0, count: 40),
            [1] + Array(repeating: 0xFF, count: 64),
        ]
        for datagram in datagrams {
            let port = alice.port
            let reply = await offPool { RawSocketProbe.udpReplyBytes(port: port, sending: datagram) }
            #expect(reply == 0)
        }
        #expect(await mallory.node.peers().isEmpty)
        #expect(await alice.node.peers().count == 1)
        let counters = await alice.node.status().counters
        #expect((counters["handshakes.refused.unknown_key"] ?? 0) >= 1)
        #expect((counters["datagrams.rejected"] ?? 0) >= 3)
        #expect(await alice.node.channelState(of: bob.node.deviceID) == .active)
        await bed.shutdown()
    }

    @Test func aReplayedOrUnconfirmedHandshakeNeverDisplacesTheChannel() async throws {
        let bed = NodeTestBed()
        defer { Task { await bed.shutdown() } }
        let alice = try await bed.start(name: "alice")
        let bob = try await bed.start(name: "bob")
        _ = try await bed.pair(alice, bob)
        try await waitUntil("paired channel active", timeout: 2) { await bothActive(alice, bob) }
        let record = try #require(await alice.node.pairedRecord(bob.node.deviceID))
        func message1(at wallNanoseconds: Int64) throws -> [UInt8] {
            let (_, message) = try ChannelHandshake.initiate(
                localStatic: bob.node.identity.keyPair, peerPublicKey: alice.node.identity.keyPair.publicKey,
                pairKey: record.pairKey,
                payload: HandshakePayload(sessionIndex: 7, udpPort: 1, wallNanoseconds: wallNanoseconds, isRekey: false))
            let macKey = HandshakeMac.key(pairKey: record.pairKey, responderPublicKey: alice.node.identity.keyPair.publicKey)
            return ConnectionKind.channel.preamble + (try WireFrame.encode(HandshakeMac.append(to: message, key: macKey)))
        }
        let port = alice.port
        // An old timestamp (a replay of an earlier message 1): silence.
        let old = try message1(at: 1)
        let replayReply = await offPool { RawSocketProbe.tcpReplyBytes(port: port, sending: old, waitMilliseconds: 300) }
        #expect(replayReply == 0)
        #expect((await alice.node.status().counters["handshakes.refused.replay"] ?? 0) >= 1)
        // A fresh one from bob's key gets message 2, but without bob's confirm nothing changes.
        let fresh = try message1(at: Int64(Date().timeIntervalSince1970 * 1e9) + 1_000_000_000)
        let freshReply = await offPool { RawSocketProbe.tcpReplyBytes(port: port, sending: fresh, waitMilliseconds: 300) }
        #expect(freshReply > 0)
        // The probe's connection closed without bob's confirm: the half-done handshake ends
        // there. Alice cannot tell it from a real bob that activated a channel she never will,
        // so she handshakes with bob again at once (`ConnectionGate.responderEnded`): the pair
        // keeps a channel of its own, and a datagram sent while its keys change may be lost.
        try await waitUntil("the unconfirmed handshake's connection closed", timeout: 2) {
            await alice.node.openConnectionCount() == 1
        }
        #expect(await bothActive(alice, bob))
        let peer = bob.node.deviceID.description
        try await waitUntil("the pair's channel carries pings on both paths", timeout: 5) {
            (try? await alice.node.ping(deviceID: peer, count: 1))?.paths.allSatisfy { $0.received == 1 } == true
        }
        let report = try await alice.node.ping(deviceID: peer, count: 3)
        #expect(report.paths.allSatisfy { $0.received == 3 }, "\(report)")
        await bed.shutdown()
    }

    @Test func forgedDatagramsForALiveSessionAreDroppedSilently() async throws {
        let seed = ProcessInfo.processInfo.environment["MESH_PROPERTY_SEED_BASE"].flatMap(UInt64.init) ?? 0xD1CE
        print("forgedDatagrams seed: \(seed)")
        var random = SeededRandom(state: seed)
        let bed = NodeTestBed()
        defer { Task { await bed.shutdown() } }
        let alice = try await bed.start(name: "alice")
        let bob = try await bed.start(name: "bob")
        _ = try await bed.pair(alice, bob)
        try await waitUntil("paired channel active", timeout: 2) { await bothActive(alice, bob) }
        let index = try #require(await alice.node.currentLocalIndex(of: bob.node.deviceID))
        let rejectedBefore = await alice.node.status().counters["datagrams.rejected"] ?? 0
        let port = alice.port
        var forged: [[UInt8]] = []
        for _ in 0..<300 {
            let length = Int.random(in: 0...200, using: &random)
            forged.append(DatagramHeader(receiverIndex: index).bytes + (0..<length).map { _ in UInt8.random(in: 0...255, using: &random) })
        }
        let datagrams = forged
        let replies = await offPool { datagrams.map { RawSocketProbe.udpReplyBytes(port: port, sending: $0, waitMilliseconds: 1) } }
        #expect(replies.allSatisfy { $0 == 0 })
        try await waitUntil("all forged datagrams counted", timeout: 3) {
            (await alice.node.status().counters["datagrams.rejected"] ?? 0) >= rejectedBefore + 300
        }
        #expect(await bothActive(alice, bob))
        let report = try await alice.node.ping(deviceID: bob.node.deviceID.description, count: 3)
        #expect(report.paths.allSatisfy { $0.received == 3 })
        await bed.shutdown()
    }

    @Test func unauthenticatedConnectionsAreCappedAndTimedOut() async throws {
        let bed = NodeTestBed()
        defer { Task { await bed.shutdown() } }
        let alice = try await bed.start(name: "alice") { configuration in
            configuration.channelTuning.maximumUnauthenticatedConnections = 4
            configuration.channelTuning.maximumUnauthenticatedPerSource = 8
            configuration.channelTuning.unauthenticatedSlotsReservedForPaired = 0
            configuration.channelTuning.firstMessageTimeout = 0.5
        }
        // Hold 8 idle connections open at once: 4 hold slots, 4 are closed at once (refused,
        // or an older one evicted for them once it waited the eviction age).
        let port = alice.port
        let descriptors = await offPool { (0..<8).map { _ in RawSocketProbe.openIdle(port: port) } }
        #expect(descriptors.allSatisfy { $0 >= 0 })
        try await waitUntil("4 connections closed over the cap", timeout: 3) {
            let counters = await alice.node.status().counters
            return (counters["connections.over_cap"] ?? 0) + (counters["connections.evicted"] ?? 0) >= 4
        }
        let replies = await offPool { descriptors.map { RawSocketProbe.drainAndClose($0, waitMilliseconds: 2000) } }
        #expect(replies.allSatisfy { $0 == 0 })
        try await waitUntil("the admitted 4 time out", timeout: 3) {
            (await alice.node.status().counters["connections.timed_out"] ?? 0) >= 4
        }
        try await waitUntil("no connection left", timeout: 2) { await alice.node.openConnectionCount() == 0 }
        await bed.shutdown()
    }

    @Test func handshakesAreRateLimitedPerSource() async throws {
        let bed = NodeTestBed()
        defer { Task { await bed.shutdown() } }
        let alice = try await bed.start(name: "alice") { configuration in
            configuration.channelTuning.handshakesPerSecondPerSource = 1
            configuration.channelTuning.handshakeBurstPerSource = 3
        }
        let port = alice.port
        for _ in 0..<6 {
            let reply = await offPool { RawSocketProbe.tcpReplyBytes(port: port, sending: [0], waitMilliseconds: 50) }
            #expect(reply == 0)
        }
        let counters = await alice.node.status().counters
        #expect((counters["connections.rate_limited"] ?? 0) >= 2)
        await bed.shutdown()
    }
}

/// SplitMix64, for reproducible random input.
struct SeededRandom: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
