import Foundation
@testable import MeshCrypto

/// Seeded randomness for property-style tests: the seed comes from MESH_PROPERTY_SEED_BASE
/// (or a fixed default) and is printed, so any failure reproduces.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64

    init(test: String) {
        let base = ProcessInfo.processInfo.environment["MESH_PROPERTY_SEED_BASE"].flatMap(UInt64.init) ?? 0x5EED_CAFE
        state = base ^ UInt64(truncatingIfNeeded: test.utf8.reduce(5381) { ($0 &* 33) &+ Int($1) })
        print("[\(test)] MESH_PROPERTY_SEED_BASE=\(base) (seed \(state))")
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func bytes(_ count: Int) -> [UInt8] {
        (0..<count).map { _ in UInt8.random(in: 0...255, using: &self) }
    }
}

enum Fixtures {
    static func keyPair(_ seed: UInt8) -> X25519KeyPair {
        // A fixed private key; X25519 clamps it.
        guard let pair = try? X25519KeyPair(privateKey: SecretBytes([UInt8](repeating: seed, count: 32))) else {
            fatalError("fixture key")
        }
        return pair
    }

    /// Both sides' channel keys from a real IKpsk2 handshake.
    static func channel(policy: RekeyPolicy = .wireGuard) throws -> (initiator: ChannelKeys, responder: ChannelKeys) {
        let psk = SecretBytes([UInt8](repeating: 7, count: 32))
        let alice = keyPair(1), bob = keyPair(2)
        var initiator = try NoiseHandshake(protocolName: "Noise_IKpsk2_25519_ChaChaPoly_SHA256", initiator: true,
                                           localStatic: alice, remoteStatic: bob.publicKey, preSharedKeys: [psk])
        var responder = try NoiseHandshake(protocolName: "Noise_IKpsk2_25519_ChaChaPoly_SHA256", initiator: false,
                                           localStatic: bob, preSharedKeys: [psk])
        _ = try responder.readMessage(try initiator.writeMessage(payload: []))
        _ = try initiator.readMessage(try responder.writeMessage(payload: []))
        return (try initiator.channelKeys(policy: policy), try responder.channelKeys(policy: policy))
    }

    static func vectorFile(_ name: String) throws -> [UInt8] {
        guard let url = Bundle.module.url(forResource: name, withExtension: "json", subdirectory: "Vectors") else {
            throw CryptoError(.invalidVectorFile, "missing resource \(name)")
        }
        return Array(try Data(contentsOf: url))
    }
}
