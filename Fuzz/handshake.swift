@testable import MeshCrypto

// libFuzzer harness: Noise handshake message parsing.
//
// The first byte picks a pattern (and psk modifier) from the table; the rest is handed to a
// responder as message 1. For IKpsk2 (the channel's protocol) the input is also read as
// message 2 by an initiator that has sent a genuine message 1. Every outcome must be a payload
// or a CryptoError — never a crash, a hang or a leak.
func fuzzHandshake(_ bytes: [UInt8]) {
    guard let selector = bytes.first else { return }
    let message = Array(bytes.dropFirst())
    let names = FuzzHandshake.names
    let name = names[Int(selector) % names.count]
    let peer = FuzzHandshake.peer
    if var responder = try? NoiseHandshake(protocolName: name, initiator: false, localStatic: FuzzKeys.staticKey,
                                           remoteStatic: peer.publicKey, preSharedKeys: [FuzzKeys.psk, FuzzKeys.psk]) {
        if (try? responder.readMessage(message)) != nil {
            _ = try? responder.writeMessage(payload: [1, 2, 3])
        }
    }
    if var initiator = try? NoiseHandshake(protocolName: "Noise_IKpsk2_25519_ChaChaPoly_SHA256", initiator: true,
                                           localStatic: peer, remoteStatic: FuzzKeys.staticKey.publicKey,
                                           preSharedKeys: [FuzzKeys.psk]),
       (try? initiator.writeMessage(payload: [])) != nil {
        _ = try? initiator.readMessage(message)
    }
}

enum FuzzHandshake {
    static let names: [String] = NoisePattern.table.keys.sorted().flatMap { base in
        ["", "psk0", "psk2"].map { "Noise_\(base)\($0)_25519_ChaChaPoly_SHA256" }
    }
    static let peer: X25519KeyPair = {
        guard let pair = try? X25519KeyPair(privateKey: SecretBytes([UInt8](repeating: 0x44, count: 32))) else {
            fatalError("fuzz fixture key")
        }
        return pair
    }()
}
