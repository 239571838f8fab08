import CSodium

extension Sodium {
    /// SHA-256 output length.
    static let sha256Length = 32
    /// SHA-512 output length.
    static let sha512Length = 64

    /// SHA-256 over the concatenation of `parts`, written into `output` (32 bytes).
    static func sha256(_ parts: [UnsafeRawBufferPointer], into output: UnsafeMutableRawBufferPointer) {
        ensureInitialized()
        precondition(output.count >= sha256Length, "SHA-256 output buffer too small")  // internal misuse only
        var state = crypto_hash_sha256_state()
        crypto_hash_sha256_init(&state)
        for part in parts {
            guard let base = part.baseAddress?.assumingMemoryBound(to: UInt8.self), part.count > 0 else { continue }
            crypto_hash_sha256_update(&state, base, UInt64(part.count))
        }
        crypto_hash_sha256_final(&state, output.baseAddress!.assumingMemoryBound(to: UInt8.self))
        withUnsafeMutableBytes(of: &state) { zero($0) }
    }

    /// SHA-256 of `data`.
    static func sha256(_ data: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: sha256Length)
        data.withUnsafeBytes { d in out.withUnsafeMutableBytes { sha256([d], into: $0) } }
        return out
    }

    /// SHA-512 over the concatenation of `parts`, written into `output` (64 bytes).
    static func sha512(_ parts: [UnsafeRawBufferPointer], into output: UnsafeMutableRawBufferPointer) {
        ensureInitialized()
        precondition(output.count >= sha512Length, "SHA-512 output buffer too small")  // internal misuse only
        var state = crypto_hash_sha512_state()
        crypto_hash_sha512_init(&state)
        for part in parts {
            guard let base = part.baseAddress?.assumingMemoryBound(to: UInt8.self), part.count > 0 else { continue }
            crypto_hash_sha512_update(&state, base, UInt64(part.count))
        }
        crypto_hash_sha512_final(&state, output.baseAddress!.assumingMemoryBound(to: UInt8.self))
        withUnsafeMutableBytes(of: &state) { zero($0) }
    }

    /// SHA-512 of `data`.
    static func sha512(_ data: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: sha512Length)
        data.withUnsafeBytes { d in out.withUnsafeMutableBytes { sha512([d], into: $0) } }
        return out
    }

    /// HMAC-SHA-256 (RFC 2104) with a key of any length over the concatenation of `parts`,
    /// written into `output` (32 bytes). libsodium hashes keys longer than the 64-byte block, as
    /// RFC 2104 and the Noise specification require.
    static func hmacSHA256(key: UnsafeRawBufferPointer, _ parts: [UnsafeRawBufferPointer],
                           into output: UnsafeMutableRawBufferPointer) {
        ensureInitialized()
        precondition(output.count >= sha256Length, "HMAC output buffer too small")  // internal misuse only
        var state = crypto_auth_hmacsha256_state()
        var empty: UInt8 = 0
        if let keyBase = key.baseAddress?.assumingMemoryBound(to: UInt8.self), key.count > 0 {
            crypto_auth_hmacsha256_init(&state, keyBase, key.count)
        } else {
            crypto_auth_hmacsha256_init(&state, &empty, 0)
        }
        for part in parts {
            guard let base = part.baseAddress?.assumingMemoryBound(to: UInt8.self), part.count > 0 else { continue }
            crypto_auth_hmacsha256_update(&state, base, UInt64(part.count))
        }
        crypto_auth_hmacsha256_final(&state, output.baseAddress!.assumingMemoryBound(to: UInt8.self))
        withUnsafeMutableBytes(of: &state) { zero($0) }
    }
}
