/// A Noise CipherState: a ChaChaPoly key and a 64-bit nonce counter (Noise spec §5.1).
///
/// Returned in pairs by ``NoiseHandshake/split()``. Each call to ``encrypt(associatedData:plaintext:)``
/// uses the next nonce; the peer's state must see the messages in the same order (this type has
/// no replay window: use ``DatagramSealer``/``DatagramOpener`` for lossy transports).
/// Before a key is set (early handshake messages), encryption is the identity function.
public struct NoiseCipherState: Sendable {
    /// The spec reserves nonce 2^64-1 for ``rekey()``.
    static let maximumNonce = UInt64.max

    var key: SecretBytes?
    /// The nonce the next encrypt/decrypt will use.
    public private(set) var nonce: UInt64 = 0

    init(key: SecretBytes? = nil) {
        self.key = key
    }

    /// Whether a key has been set (Noise `HasKey()`).
    public var hasKey: Bool { key != nil }

    /// Encrypts `plaintext` with the next nonce, authenticating `associatedData` too, and returns
    /// ciphertext || 16-byte tag (or `plaintext` unchanged when no key is set yet).
    /// Throws ``CryptoError/Code/rekeyRequired`` when the nonce space is exhausted.
    public mutating func encrypt(associatedData: [UInt8], plaintext: [UInt8]) throws -> [UInt8] {
        guard let key else { return plaintext }
        guard nonce < Self.maximumNonce else {
            throw CryptoError(.rekeyRequired, "Noise cipher state has used every nonce; rekey or run a new handshake")
        }
        let sealed = Sodium.aeadSeal(key: key, counter: nonce, associatedData: associatedData, plaintext: plaintext)
        nonce += 1
        return sealed
    }

    /// Authenticates and decrypts `ciphertext` (ciphertext || tag) with the next nonce.
    /// On failure the nonce does not advance and ``CryptoError/Code/authenticationFailed`` is thrown.
    public mutating func decrypt(associatedData: [UInt8], ciphertext: [UInt8]) throws -> [UInt8] {
        guard let key else { return ciphertext }
        guard nonce < Self.maximumNonce else {
            throw CryptoError(.rekeyRequired, "Noise cipher state has used every nonce; rekey or run a new handshake")
        }
        let opened = try Sodium.aeadOpen(key: key, counter: nonce, associatedData: associatedData, ciphertext: ciphertext)
        nonce += 1
        return opened
    }

    /// Noise `Rekey()` (spec §4.2): replaces the key with the first 32 bytes of
    /// `ENCRYPT(k, 2^64-1, "", zeros(32))`, keeping the nonce. Both sides must rekey at the same
    /// point in the message stream. It gives no forward secrecy against a compromised current key
    /// (a fresh handshake does); it limits how much data one key protects.
    public mutating func rekey() {
        guard let key else { return }
        let zeros = [UInt8](repeating: 0, count: 32)
        var next = Sodium.aeadSeal(key: key, counter: Self.maximumNonce, associatedData: [], plaintext: zeros)
        self.key = SecretBytes(Array(next[0..<32]))
        Sodium.zero(&next)
    }
}
