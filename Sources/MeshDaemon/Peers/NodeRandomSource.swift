import MeshCrypto

/// Where a node's random choices come from: the session indices of its handshakes, its
/// handshake and rekey ephemeral keys, the jitter of its reconnect backoff.
///
/// The default is libsodium's CSPRNG (`SodiumRandomSource`); the simulator passes a seeded
/// source so a run replays exactly. A source must be cryptographically secure wherever the
/// daemon talks to real peers: ephemeral keys come from it.
public protocol NodeRandomSource: Sendable {
    /// Fills `bytes` with random bytes (on the node's loop).
    func fill(_ bytes: UnsafeMutableRawBufferPointer)
}

/// libsodium's `randombytes_buf`.
public struct SodiumRandomSource: NodeRandomSource {
    /// The system's CSPRNG through libsodium.
    public init() {}

    public func fill(_ bytes: UnsafeMutableRawBufferPointer) { PairingSupport.randomBytes(into: bytes) }
}

/// A node's random source as a `RandomNumberGenerator`, plus the ephemeral keys drawn from it.
struct NodeRandom: RandomNumberGenerator, Sendable {
    let source: any NodeRandomSource

    init(_ source: any NodeRandomSource = SodiumRandomSource()) { self.source = source }

    mutating func next() -> UInt64 {
        var value: UInt64 = 0
        withUnsafeMutableBytes(of: &value) { source.fill($0) }
        return value
    }

    /// A fresh X25519 key pair whose private key is written straight into zeroing storage.
    func ephemeralKey() -> X25519KeyPair {
        let privateKey = SecretBytes(count: 32) { source.fill($0) }
        // A 32-byte key always derives; the fallback keeps this total without a trap.
        return (try? X25519KeyPair(privateKey: privateKey)) ?? .generate()
    }
}
