@testable import MeshDaemon
import MeshCore
import MeshCrypto
import Testing

/// A node's random choices come from its injected `NodeRandomSource`: with one seed, the same
/// session indices, ephemeral keys and so the same handshake bytes; with another, others.
@Suite("Peer channels: the injected random source")
struct PeerChannelsRandomTests {
    /// SplitMix64 bytes (a seeded source for tests; the simulator has its own).
    final class SeededSource: NodeRandomSource, @unchecked Sendable {
        private var generator: SeededRandom

        init(seed: UInt64) { generator = SeededRandom(state: seed) }

        func fill(_ bytes: UnsafeMutableRawBufferPointer) {
            for index in bytes.indices { bytes[index] = UInt8(truncatingIfNeeded: generator.next()) }
        }
    }

    /// Message 1 towards Bob from a fresh `PeerChannels` of the same identity and pairing.
    static func message1(seed: UInt64, localKeys: X25519KeyPair, peer: PairedPeer) throws -> [UInt8] {
        var channels = PeerChannels(localKeys: localKeys, tuning: ChannelTuning(), records: [peer], leaseSeconds: 3,
                                    random: SeededSource(seed: seed))
        let (message1, _) = try PeerChannelsTests.start(&channels, peer.deviceID, replacingLiveChannel: false, udpPort: 4000,
                                                        wall: 1_000, now: 0)
        return message1
    }

    @Test func oneSeedGivesTheSameHandshakeAndAnotherSeedADifferentOne() throws {
        let seed = UInt64.random(in: 1 ... .max)
        print("seed \(seed)")
        let aliceKeys = X25519KeyPair.generate(), bobKeys = X25519KeyPair.generate()
        let bob = PairedPeer(publicKey: bobKeys.publicKey, name: "bob", pairKey: SecretBytes.random(count: 32),
                             addresses: [], pairedAt: 0)
        let first = try Self.message1(seed: seed, localKeys: aliceKeys, peer: bob)
        let again = try Self.message1(seed: seed, localKeys: aliceKeys, peer: bob)
        let other = try Self.message1(seed: seed &+ 1, localKeys: aliceKeys, peer: bob)
        #expect(first == again)
        #expect(first != other)
        // The ephemeral public key follows the 2-byte frame length and the payload-free prefix:
        // it is message 1's first 32 bytes after the length.
        #expect(first[2 ..< 34] != other[2 ..< 34])
    }
}
