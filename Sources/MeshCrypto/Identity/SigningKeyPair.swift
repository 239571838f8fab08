import CSodium

/// An Ed25519 key pair (libsodium `crypto_sign`): what signs a device's roster records.
///
/// A device's signing key is derived from its static X25519 private key
/// (``derived(from:)``), so it needs no file of its own and is the same after every restart.
/// The secret half lives in zeroing storage and is never printed.
public struct SigningKeyPair: Sendable {
    /// The 32-byte Ed25519 public key.
    public let publicKey: [UInt8]
    /// libsodium's 64-byte secret key (seed followed by the public key).
    let secretKey: SecretBytes

    /// Length of a public key.
    public static let publicKeyLength = 32
    /// Length of a signature.
    public static let signatureLength = 64
    /// The domain of the derivation (33 ASCII bytes).
    static let derivationLabel = Array("SessionMesh roster signing key v1".utf8)

    /// The key pair whose seed is HMAC-SHA-256(key = `staticKeys`' private key,
    /// "SessionMesh roster signing key v1").
    public static func derived(from staticKeys: X25519KeyPair) -> SigningKeyPair {
        var seed = PairingSupport.hmacSHA256(key: staticKeys.privateKey, message: derivationLabel)
        defer { PairingSupport.zero(&seed) }
        return SigningKeyPair(seed: seed)
    }

    /// The key pair of a 32-byte `seed` (`crypto_sign_seed_keypair`).
    public init(seed: [UInt8]) {
        Sodium.ensureInitialized()
        precondition(seed.count == 32, "an Ed25519 seed is 32 bytes")  // internal misuse only
        var publicKey = [UInt8](repeating: 0, count: Self.publicKeyLength)
        secretKey = SecretBytes(count: 64) { secret in
            _ = seed.withUnsafeBytes { s in
                publicKey.withUnsafeMutableBytes { p in
                    crypto_sign_seed_keypair(p.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                             secret.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                             s.baseAddress!.assumingMemoryBound(to: UInt8.self))
                }
            }
        }
        self.publicKey = publicKey
    }

    /// The detached signature (64 bytes) of `message`.
    public func sign(_ message: [UInt8]) -> [UInt8] {
        var signature = [UInt8](repeating: 0, count: Self.signatureLength)
        secretKey.withUnsafeBytes { secret in
            message.withUnsafeBytes { m in
                signature.withUnsafeMutableBytes { out in
                    _ = crypto_sign_detached(out.baseAddress!.assumingMemoryBound(to: UInt8.self), nil,
                                             m.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(m.count),
                                             secret.baseAddress!.assumingMemoryBound(to: UInt8.self))
                }
            }
        }
        return signature
    }

    /// Whether `signature` is `publicKey`'s valid signature of `message` (libsodium refuses
    /// non-canonical and small-order encodings). False for inputs of the wrong length.
    public static func verify(_ signature: [UInt8], of message: [UInt8], publicKey: [UInt8]) -> Bool {
        guard signature.count == signatureLength, publicKey.count == publicKeyLength else { return false }
        Sodium.ensureInitialized()
        return signature.withUnsafeBytes { s in
            message.withUnsafeBytes { m in
                publicKey.withUnsafeBytes { p in
                    crypto_sign_verify_detached(s.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                                m.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(m.count),
                                                p.baseAddress!.assumingMemoryBound(to: UInt8.self)) == 0
                }
            }
        }
    }
}
