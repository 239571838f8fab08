@testable import MeshCrypto

// libFuzzer harness: pairing inputs from people and from the network.
//
// The input is parsed as a typed pairing code (must return a code or a CryptoError; a parsed
// code must round-trip through its description), and its first 32 bytes are used as a peer's
// CPace share (must give an ISK or a CryptoError; invalid and identity shares must be refused).
func fuzzPairing(_ bytes: [UInt8]) {
    let text = String(decoding: bytes, as: UTF8.self)
    if let code = try? PairingCode.parse(text) {
        guard let again = try? PairingCode.parse(code.description), again == code else {
            fatalError("a parsed pairing code did not round-trip")
        }
    }
    if bytes.count >= 32 {
        let share = Array(bytes[0..<32])
        let adLength = min(bytes.count - 32, 64)
        _ = try? FuzzPairing.party.finish(peerShare: share, peerAssociatedData: Array(bytes[32..<(32 + adLength)]))
        _ = try? FuzzPairing.party.finishParallel(peerShare: share, peerAssociatedData: [])
    } else {
        _ = try? FuzzPairing.party.finish(peerShare: bytes, peerAssociatedData: [])
    }
}

enum FuzzPairing {
    static let party: CPace = {
        guard let party = try? CPace(role: .responder, password: Array("1234567".utf8),
                                     channelIdentifier: [1], sessionID: [2], associatedData: [3]) else {
            fatalError("fuzz fixture CPace")
        }
        return party
    }()
}
