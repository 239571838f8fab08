import CSodium

/// The few symmetric primitives the pairing protocol (MeshDaemon, docs/PAIRING.md) builds on
/// top of CPace's session key: HKDF-SHA-256, HMAC-SHA-256, SHA-256, a constant-time compare
/// and a one-shot ChaCha20-Poly1305 (IETF) seal/open.
///
/// Self-contained on purpose (it talks to libsodium directly and uses only the public
/// ``SecretBytes`` API) so it does not depend on MeshCrypto's internal helpers.
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
        var prk = secret.withUnsafeBytes { ikm in
            salt.withUnsafeBytes { hmac(key: $0, parts: [ikm]) }
        }
        defer { zero(&prk) }
        var okm: [UInt8] = []
        var block: [UInt8] = []
        var counter: UInt8 = 1
        while okm.count < count {
            let next = prk.withUnsafeBytes { key in
                block.withUnsafeBytes { b in
                    info.withUnsafeBytes { i in
                        [counter].withUnsafeBytes { c in hmac(key: key, parts: [b, i, c]) }
                    }
                }
            }
            zero(&block)
            block = next
            okm += block
            counter &+= 1
        }
        zero(&block)
        let result = SecretBytes(Array(okm.prefix(count)))
        zero(&okm)
        return result
    }

    /// HMAC-SHA-256 of `message` under `key`.
    public static func hmacSHA256(key: SecretBytes, message: [UInt8]) -> [UInt8] {
        key.withUnsafeBytes { k in message.withUnsafeBytes { hmac(key: k, parts: [$0]) } }
    }

    /// SHA-256 of `bytes`.
    public static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        var state = crypto_hash_sha256_state()
        crypto_hash_sha256_init(&state)
        bytes.withUnsafeBytes { input in
            guard let base = input.baseAddress?.assumingMemoryBound(to: UInt8.self), input.count > 0 else { return }
            crypto_hash_sha256_update(&state, base, UInt64(input.count))
        }
        var out = [UInt8](repeating: 0, count: macBytes)
        _ = out.withUnsafeMutableBytes { crypto_hash_sha256_final(&state, $0.baseAddress!.assumingMemoryBound(to: UInt8.self)) }
        return out
    }

    /// `true` when `a` and `b` are equal, compared in constant time for equal lengths.
    public static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        guard !a.isEmpty else { return true }
        return a.withUnsafeBytes { pa in
            b.withUnsafeBytes { pb in sodium_memcmp(pa.baseAddress!, pb.baseAddress!, a.count) == 0 }
        }
    }

    /// Seals `plaintext` with ChaCha20-Poly1305 (IETF) under `key` and an all-zero nonce.
    ///
    /// The zero nonce is safe only because every key passed here seals exactly one message
    /// (pairing derives a fresh key per direction per attempt). Returns `nil` when `key` is not
    /// ``keyBytes`` long.
    public static func sealOnce(key: SecretBytes, plaintext: [UInt8], associatedData: [UInt8]) -> [UInt8]? {
        guard key.count == keyBytes else { return nil }
        var out = [UInt8](repeating: 0, count: plaintext.count + sealOverhead)
        let nonce = [UInt8](repeating: 0, count: Int(crypto_aead_chacha20poly1305_ietf_NPUBBYTES))
        var outLength: UInt64 = 0
        let status = key.withUnsafeBytes { k in
            plaintext.withUnsafeBytes { p in
                associatedData.withUnsafeBytes { ad in
                    out.withUnsafeMutableBytes { o in
                        crypto_aead_chacha20poly1305_ietf_encrypt(
                            o.baseAddress!.assumingMemoryBound(to: UInt8.self), &outLength,
                            p.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(p.count),
                            ad.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(ad.count),
                            nil, nonce, k.baseAddress!.assumingMemoryBound(to: UInt8.self))
                    }
                }
            }
        }
        guard status == 0, outLength == UInt64(out.count) else { return nil }
        return out
    }

    /// Opens what ``sealOnce(key:plaintext:associatedData:)`` sealed. Returns `nil` when the
    /// ciphertext is forged, corrupted, sealed under another key or associated data, or too short.
    public static func openOnce(key: SecretBytes, ciphertext: [UInt8], associatedData: [UInt8]) -> [UInt8]? {
        guard key.count == keyBytes, ciphertext.count >= sealOverhead else { return nil }
        // One spare byte keeps the buffer non-empty (a valid pointer) for an empty plaintext.
        var out = [UInt8](repeating: 0, count: ciphertext.count - sealOverhead + 1)
        let nonce = [UInt8](repeating: 0, count: Int(crypto_aead_chacha20poly1305_ietf_NPUBBYTES))
        var outLength: UInt64 = 0
        let status = key.withUnsafeBytes { k in
            ciphertext.withUnsafeBytes { c in
                associatedData.withUnsafeBytes { ad in
                    out.withUnsafeMutableBytes { o in
                        crypto_aead_chacha20poly1305_ietf_decrypt(
                            o.baseAddress!.assumingMemoryBound(to: UInt8.self),
                            &outLength, nil,
                            c.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(c.count),
                            ad.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(ad.count),
                            nonce, k.baseAddress!.assumingMemoryBound(to: UInt8.self))
                    }
                }
            }
        }
        guard status == 0, outLength == UInt64(ciphertext.count - sealOverhead) else { return nil }
        out.removeLast()
        return out
    }

    /// `count` random bytes from libsodium's CSPRNG (for non-secret nonces and session ids).
    public static func randomBytes(count: Int) -> [UInt8] {
        guard count > 0 else { return [] }
        _ = sodium_init()
        var out = [UInt8](repeating: 0, count: count)
        out.withUnsafeMutableBytes { randombytes_buf($0.baseAddress!, $0.count) }
        return out
    }

    private static func hmac(key: UnsafeRawBufferPointer, parts: [UnsafeRawBufferPointer]) -> [UInt8] {
        var state = crypto_auth_hmacsha256_state()
        var empty: UInt8 = 0
        if let base = key.baseAddress?.assumingMemoryBound(to: UInt8.self), key.count > 0 {
            crypto_auth_hmacsha256_init(&state, base, key.count)
        } else {
            crypto_auth_hmacsha256_init(&state, &empty, 0)
        }
        for part in parts {
            guard let base = part.baseAddress?.assumingMemoryBound(to: UInt8.self), part.count > 0 else { continue }
            crypto_auth_hmacsha256_update(&state, base, UInt64(part.count))
        }
        var out = [UInt8](repeating: 0, count: macBytes)
        _ = out.withUnsafeMutableBytes { crypto_auth_hmacsha256_final(&state, $0.baseAddress!.assumingMemoryBound(to: UInt8.self)) }
        withUnsafeMutableBytes(of: &state) { sodium_memzero($0.baseAddress!, $0.count) }
        return out
    }

    /// Overwrites `bytes` with zeros in a way the compiler cannot remove (for temporary copies
    /// of secrets, such as a pairing code's password bytes).
    public static func zero(_ bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBytes { buffer in
            guard let base = buffer.baseAddress, buffer.count > 0 else { return }
            sodium_memzero(base, buffer.count)
        }
    }
}
