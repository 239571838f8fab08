/// The few symmetric primitives the pairing protocol (MeshDaemon, docs/PAIRING.md) builds on
/// top of CPace's session key: HKDF-SHA-256, HMAC-SHA-256, SHA-256, a constant-time compare and
/// a one-shot ChaCha20-Poly1305 (IETF) seal/open.
///
/// A thin public face over MeshCrypto's `Sodium` wrappers, so the daemon never sees libsodium.
/// Added by the pairing work; nothing else in MeshCrypto depends on it.
public enum PairingSupport {
    /// Length of an HMAC-SHA-256 tag and of a SHA-256 digest.
    public static let macBytes = 32
    /// Length of an AEAD key.
    public static let keyBytes = 32
    /// Bytes a sealed message is longer than its plaintext (the Poly1305 tag).
    public static let sealOverhead = 16

    /// HKDF-SHA-256 (RFC 5869): extract with `salt` from `secret`, expand with `info` to
    /// `count` bytes (1...8160; other counts give an empty result).
    public static func hkdfSHA256(secret: SecretBytes, salt: [UInt8], info: [UInt8], count: Int = 32) -> SecretBytes {
        guard count > 0, count <= 255 * macBytes else { return SecretBytes([]) }
        let prk = SecretBytes(count: macBytes) { out in
            secret.withUnsafeBytes { ikm in salt.withUnsafeBytes { Sodium.hmacSHA256(key: $0, [ikm], into: out) } }
        }
        let blocks = (count + macBytes - 1) / macBytes
        var okm = [UInt8](repeating: 0, count: blocks * macBytes)
        defer { Sodium.zero(&okm) }
        okm.withUnsafeMutableBytes { okmBuffer in
            prk.withUnsafeBytes { key in
                info.withUnsafeBytes { infoBytes in
                    for index in 0 ..< blocks {
                        // T(i) = HMAC(PRK, T(i-1) || info || i), written straight into the output.
                        let previous = index == 0
                            ? UnsafeRawBufferPointer(start: nil, count: 0)
                            : UnsafeRawBufferPointer(rebasing: okmBuffer[(index - 1) * macBytes ..< index * macBytes])
                        withUnsafeBytes(of: UInt8(index + 1)) { counter in
                            Sodium.hmacSHA256(key: key, [previous, infoBytes, counter],
                                              into: UnsafeMutableRawBufferPointer(rebasing: okmBuffer[index * macBytes ..< (index + 1) * macBytes]))
                        }
                    }
                }
            }
        }
        return SecretBytes(count: count) { out in
            okm.withUnsafeBytes { out.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[0 ..< count])) }
        }
    }

    /// HMAC-SHA-256 of `message` under `key`.
    public static func hmacSHA256(key: SecretBytes, message: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: macBytes)
        key.withUnsafeBytes { k in
            message.withUnsafeBytes { m in out.withUnsafeMutableBytes { Sodium.hmacSHA256(key: k, [m], into: $0) } }
        }
        return out
    }

    /// SHA-256 of `bytes`.
    public static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        Sodium.sha256(bytes)
    }

    /// `true` when `a` and `b` are equal, compared in constant time for equal lengths.
    public static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        a.withUnsafeBytes { pa in b.withUnsafeBytes { pb in Sodium.constantTimeEqual(pa, pb) } }
    }

    /// Seals `plaintext` with ChaCha20-Poly1305 (IETF) under `key` and nonce 0.
    ///
    /// Nonce 0 is safe only because every key passed here seals exactly one message (pairing
    /// derives a fresh key per direction per attempt). Returns `nil` when `key` is not
    /// ``keyBytes`` long.
    public static func sealOnce(key: SecretBytes, plaintext: [UInt8], associatedData: [UInt8]) -> [UInt8]? {
        guard key.count == keyBytes else { return nil }
        return Sodium.aeadSeal(key: key, counter: 0, associatedData: associatedData, plaintext: plaintext)
    }

    /// Opens what ``sealOnce(key:plaintext:associatedData:)`` sealed. Returns `nil` when the
    /// ciphertext is forged, corrupted, sealed under another key or associated data, or too short.
    public static func openOnce(key: SecretBytes, ciphertext: [UInt8], associatedData: [UInt8]) -> [UInt8]? {
        guard key.count == keyBytes else { return nil }
        return try? Sodium.aeadOpen(key: key, counter: 0, associatedData: associatedData, ciphertext: ciphertext)
    }

    /// X25519(`privateKey`, `publicKey`): the shared secret the proof of possession in pairing
    /// is keyed with. `nil` when a key is not 32 bytes or the result is all zero (a low-order
    /// public key, which would let anyone "prove" a key without holding its private half).
    public static func x25519(privateKey: SecretBytes, publicKey: [UInt8]) -> SecretBytes? {
        try? Sodium.x25519(privateKey: privateKey, publicKey: publicKey)
    }

    /// The secrets `parts` one after another, written straight into zeroing storage (an HKDF
    /// input built from two secrets never exists in an ordinary array).
    public static func concatenated(_ parts: [SecretBytes]) -> SecretBytes {
        let total = parts.reduce(0) { $0 + $1.count }
        return SecretBytes(count: total) { out in
            var offset = 0
            for part in parts {
                part.withUnsafeBytes { source in
                    UnsafeMutableRawBufferPointer(rebasing: out[offset ..< offset + source.count]).copyMemory(from: source)
                }
                offset += part.count
            }
        }
    }

    /// Fills `buffer` from libsodium's CSPRNG (`randombytes_buf`), in place: for secrets written
    /// straight into their zeroing storage (`SecretBytes(count:_:)`).
    public static func randomBytes(into buffer: UnsafeMutableRawBufferPointer) {
        Sodium.randomBytes(into: buffer)
    }

    /// `count` random bytes from libsodium's CSPRNG (for non-secret values such as session ids).
    public static func randomBytes(count: Int) -> [UInt8] {
        Sodium.randomBytes(count: max(0, count))
    }

    /// Overwrites `bytes` with zeros in a way the compiler cannot remove (for temporary copies
    /// of secrets, such as a pairing code's password bytes).
    public static func zero(_ bytes: inout [UInt8]) {
        Sodium.zero(&bytes)
    }
}
