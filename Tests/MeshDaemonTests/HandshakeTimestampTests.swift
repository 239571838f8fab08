import Foundation
import MeshCrypto
import Testing
@testable import MeshDaemon
#if canImport(Glibc)
import Glibc
#endif

/// A paired peer's handshake timestamps: one too far ahead is refused, and a timestamp counts
/// (as the one later handshakes must exceed) only once its handshake was confirmed. Message 1
/// is made by hand with the peer's real keys and sent over a plain TCP socket.
@Suite("Handshake timestamps", .serialized)
struct HandshakeTimestampTests {
    /// A blocking TCP connection to 127.0.0.1 speaking the channel's frames.
    final class FrameSocket: @unchecked Sendable {
        let fd: Int32

        init?(port: Int) {
            fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { return nil }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard connected == 0 else {
                close(fd)
                return nil
            }
            var timeout = timeval(tv_sec: 3, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        }

        deinit { close(fd) }

        func send(_ bytes: [UInt8]) {
            _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        }

        private func read(_ count: Int) -> [UInt8]? {
            var bytes = [UInt8](repeating: 0, count: count)
            var got = 0
            while got < count {
                let n = bytes[got...].withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if n <= 0 { return nil }
                got += n
            }
            return bytes
        }

        /// The next frame body, or nil when the node closed (or said nothing for 3 s).
        func readFrame() -> [UInt8]? {
            guard let prefix = read(2) else { return nil }
            return read(Int(prefix[0]) << 8 | Int(prefix[1]))
        }
    }

    /// Starts two paired nodes; the one with the smaller key plays the peer (its connects
    /// always win the simultaneous-connect rule, so a hand-made one is never refused for that).
    static func pair(_ bed: NodeTestBed) async throws -> (victim: RunningNode, peer: RunningNode) {
        let a = try await bed.start(name: "a"), b = try await bed.start(name: "b")
        _ = try await bed.pair(a, b)
        try await waitUntil("channel active", timeout: 15) { await bothActive(a, b) }
        let aFirst = a.node.identity.keyPair.publicKey.lexicographicallyPrecedes(b.node.identity.keyPair.publicKey)
        return aFirst ? (b, a) : (a, b)
    }

    /// Message 1 from `peer` to `victim` stamped `timestamp`, with the preamble, and its handshake.
    static func message1(from peer: RunningNode, to victim: RunningNode,
                         timestamp: Int64) async throws -> ([UInt8], ChannelHandshake) {
        let record = try #require(await peer.node.pairedRecord(of: victim.node.deviceID))
        let payload = HandshakePayload(sessionIndex: 77, udpPort: 0, wallNanoseconds: timestamp, isRekey: false)
        let (handshake, message) = try ChannelHandshake.initiate(localStatic: peer.node.identity.keyPair,
                                                                 peerPublicKey: record.publicKey, pairKey: record.pairKey,
                                                                 payload: payload)
        let macKey = HandshakeMac.key(pairKey: record.pairKey, responderPublicKey: record.publicKey)
        return (ConnectionKind.channel.preamble + (try WireFrame.encode(HandshakeMac.append(to: message, key: macKey))), handshake)
    }

    static func counter(_ node: MeshNode, _ name: String) async -> UInt64 { await node.status().counters[name] ?? 0 }

    @Test func handshakeStampedFarAheadIsRefusedAndUnconfirmedOnesAreNotRecorded() async throws {
        let bed = NodeTestBed()
        do {
            let (victim, peer) = try await Self.pair(bed)
            let now = Int64(Date().timeIntervalSince1970 * 1e9)

            // Int64.max, and just over the bound: refused without a byte.
            for timestamp in [Int64.max, now + HandshakePayload.maximumLeadNanoseconds + 60_000_000_000] {
                let (bytes, _) = try await Self.message1(from: peer, to: victim, timestamp: timestamp)
                let socket = try #require(FrameSocket(port: victim.port))
                socket.send(bytes)
                #expect(await offPool { socket.readFrame() } == nil)
            }
            #expect(await Self.counter(victim.node, "handshakes.refused.future") == 2)

            // Half an hour ahead is within the bound: answered, but never confirmed here.
            let (ahead, _) = try await Self.message1(from: peer, to: victim, timestamp: now + 1_800_000_000_000)
            let unconfirmed = try #require(FrameSocket(port: victim.port))
            unconfirmed.send(ahead)
            #expect(await offPool { unconfirmed.readFrame() } != nil)

            // A confirmed handshake stamped now still works: the unconfirmed one was not recorded.
            let completed = await Self.counter(victim.node, "handshakes.completed")
            let (current, handshake) = try await Self.message1(from: peer, to: victim,
                                                               timestamp: Int64(Date().timeIntervalSince1970 * 1e9))
            let socket = try #require(FrameSocket(port: victim.port))
            socket.send(current)
            let message2 = try #require(await offPool { socket.readFrame() })
            var initiator = handshake
            let (payload, keys) = try initiator.readResponse(message2)
            var channel = ActiveChannel(keys: keys, localIndex: 77, remoteIndex: payload.sessionIndex, locallyInitiated: true,
                                        now: 0, tuning: ChannelTuning())
            socket.send(try channel.sealStream(.confirm))
            try await waitUntil("the confirmed handshake activated a channel", timeout: 5) {
                await Self.counter(victim.node, "handshakes.completed") > completed
            }
            #expect(await Self.counter(victim.node, "handshakes.refused.replay") == 0)

            // Replaying that confirmed message 1 is refused: its MAC was seen (before any
            // X25519), and its timestamp is the stored one.
            let replay = try #require(FrameSocket(port: victim.port))
            replay.send(current)
            #expect(await offPool { replay.readFrame() } == nil)
            #expect(await Self.counter(victim.node, "handshakes.refused.seen") == 1)
            let stored = try PairedDeviceStore(stateDirectory: await victim.node.configuration.stateDirectory).load()
            #expect(stored.first?.handshakeTimestamp != nil)
        } catch {
            await bed.shutdown()
            throw error
        }
        await bed.shutdown()
    }
}
