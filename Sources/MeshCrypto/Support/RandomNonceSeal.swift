extension PairingSupport {
    /// Length of the random nonce `sealWithRandomNonce` puts first.
    public static let randomNonceLength = 24

    /// XChaCha20-Poly1305 under `key` with a fresh random 24-byte nonce: `nonce | ciphertext | tag`.
    /// For keys that seal more than one message (a random 192-bit nonce never repeats).
    public static func sealWithRandomNonce(key: SecretBytes, plaintext: [UInt8], associatedData: [UInt8]) -> [UInt8] {
        let nonce = Sodium.randomBytes(count: randomNonceLength)
        return nonce + Sodium.xchachaSeal(key: key, nonce: nonce, associatedData: associatedData, plaintext: plaintext)
    }

    /// Opens what `sealWithRandomNonce` sealed; nil when it does not authenticate.
    public static func openWithRandomNonce(key: SecretBytes, sealed: [UInt8], associatedData: [UInt8]) -> [UInt8]? {
        guard sealed.count >= randomNonceLength + 16 else { return nil }
        return try? Sodium.xchachaOpen(key: key, nonce: Array(sealed.prefix(randomNonceLength)), associatedData: associatedData,
                                       ciphertext: Array(sealed.dropFirst(randomNonceLength)))
    }
}
