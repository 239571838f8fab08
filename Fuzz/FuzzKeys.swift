@testable import MeshCrypto

// Shared fixed keys for the fuzz harnesses (never used outside fuzzing).
enum FuzzKeys {
    static let datagram = SecretBytes([UInt8](repeating: 0x31, count: 32))
    static let stream = SecretBytes([UInt8](repeating: 0x32, count: 32))
    static let staticKey: X25519KeyPair = {
        guard let pair = try? X25519KeyPair(privateKey: SecretBytes([UInt8](repeating: 0x33, count: 32))) else {
            fatalError("fuzz fixture key")
        }
        return pair
    }()
    static let psk = SecretBytes([UInt8](repeating: 0x34, count: 32))
}
