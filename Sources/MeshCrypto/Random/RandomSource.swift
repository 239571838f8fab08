/// Where a daemon's random bytes come from: ephemeral keys, session indices, backoff jitter.
///
/// `meshd` uses ``SodiumRandomSource`` (libsodium's `randombytes_buf`, a cryptographically
/// secure generator). The simulator injects a seeded source per daemon, so one seed replays
/// the same handshakes, the same indices and the same retries (docs/SIMULATION.md). A source
/// other than libsodium's has no place outside tests: the Noise ephemerals drawn from it are
/// what keeps past traffic secret.
public protocol RandomSource: Sendable {
    /// Fills `buffer` with random bytes.
    func fill(_ buffer: UnsafeMutableRawBufferPointer)
}

/// libsodium's cryptographically secure generator: the source of every production daemon.
public struct SodiumRandomSource: RandomSource {
    public init() {}

    public func fill(_ buffer: UnsafeMutableRawBufferPointer) { Sodium.randomBytes(into: buffer) }
}

/// A `RandomNumberGenerator` over a ``RandomSource`` (for `Int.random(in:using:)` and the like).
public struct RandomSourceGenerator: RandomNumberGenerator, Sendable {
    /// Where the bits come from.
    public let source: any RandomSource

    public init(_ source: any RandomSource) { self.source = source }

    /// The next 64 random bits.
    public mutating func next() -> UInt64 {
        var value: UInt64 = 0
        withUnsafeMutableBytes(of: &value) { source.fill($0) }
        return value
    }
}

extension SecretBytes {
    /// `count` bytes from `source`, written straight into the zeroing storage.
    public static func random(count: Int, using source: any RandomSource) -> SecretBytes {
        SecretBytes(count: count) { source.fill($0) }
    }
}

extension X25519KeyPair {
    /// A fresh key pair whose private key comes from `source`.
    public static func generate(using source: any RandomSource) -> X25519KeyPair {
        let privateKey = SecretBytes.random(count: Sodium.x25519Length, using: source)
        // A 32-byte key cannot fail derivation; the fallback keeps this non-throwing without `try!`.
        guard let pair = try? X25519KeyPair(privateKey: privateKey) else {
            fatalError("MeshCrypto: X25519 public key derivation failed for a fresh 32-byte key")
        }
        return pair
    }
}
