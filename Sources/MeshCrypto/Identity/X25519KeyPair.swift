/// A Curve25519 Diffie-Hellman key pair (X25519): a device's long-term identity or a Noise ephemeral.
public struct X25519KeyPair: Sendable {
    /// The 32-byte public key; safe to share and to log.
    public let publicKey: [UInt8]
    /// The 32-byte private key; zeroed when released, never printed.
    public let privateKey: SecretBytes

    /// A fresh key pair from libsodium's secure random generator.
    public static func generate() -> X25519KeyPair { generate(using: SodiumRandomSource()) }

    /// Rebuilds a key pair from its private key, deriving the public key.
    /// Throws ``CryptoError/Code/invalidKey`` unless `privateKey` is 32 bytes.
    public init(privateKey: SecretBytes) throws {
        self.publicKey = try Sodium.x25519PublicKey(privateKey: privateKey)
        self.privateKey = privateKey
    }
}
