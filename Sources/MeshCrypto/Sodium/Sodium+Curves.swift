import CSodium

extension Sodium {
    /// X25519 public-key / private-key / shared-secret length.
    static let x25519Length = 32
    /// ristretto255 element and scalar length.
    static let ristrettoLength = 32
    /// Input length of ristretto255 `from_hash`.
    static let ristrettoHashLength = 64

    /// X25519 base-point multiplication: the public key of `privateKey` (32 bytes, clamped by libsodium).
    static func x25519PublicKey(privateKey: SecretBytes) throws -> [UInt8] {
        ensureInitialized()
        guard privateKey.count == x25519Length else {
            throw CryptoError(.invalidKey, "an X25519 private key is 32 bytes, got \(privateKey.count)")
        }
        var out = [UInt8](repeating: 0, count: x25519Length)
        let status = privateKey.withUnsafeBytes { sk in
            out.withUnsafeMutableBytes {
                crypto_scalarmult_base($0.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                       sk.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
        }
        try check(status, .invalidKey, "X25519 public key derivation failed")
        return out
    }

    /// X25519(privateKey, publicKey). Throws ``CryptoError/Code/weakSharedSecret`` when the result is
    /// all zero (the peer sent a low-order point), and ``CryptoError/Code/invalidKey`` on a bad length.
    static func x25519(privateKey: SecretBytes, publicKey: [UInt8]) throws -> SecretBytes {
        ensureInitialized()
        guard privateKey.count == x25519Length, publicKey.count == x25519Length else {
            throw CryptoError(.invalidKey, "X25519 keys are 32 bytes")
        }
        return try SecretBytes(count: x25519Length) { out in
            let status = privateKey.withUnsafeBytes { sk in
                publicKey.withUnsafeBytes { pk in
                    crypto_scalarmult(out.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                      sk.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                      pk.baseAddress!.assumingMemoryBound(to: UInt8.self))
                }
            }
            try check(status, .weakSharedSecret, "the peer's X25519 public key gives an all-zero shared secret")
        }
    }

    /// ristretto255 `from_hash` (hash-to-group, element-derivation) of exactly 64 bytes.
    static func ristrettoFromHash(_ hash: UnsafeRawBufferPointer) -> [UInt8] {
        ensureInitialized()
        precondition(hash.count == ristrettoHashLength, "from_hash takes 64 bytes")  // internal misuse only
        var out = [UInt8](repeating: 0, count: ristrettoLength)
        out.withUnsafeMutableBytes {
            _ = crypto_core_ristretto255_from_hash($0.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                                   hash.baseAddress!.assumingMemoryBound(to: UInt8.self))
        }
        return out
    }

    /// A uniformly random, reduced ristretto255 scalar.
    static func ristrettoRandomScalar() -> SecretBytes {
        ensureInitialized()
        return SecretBytes(count: ristrettoLength) { out in
            crypto_core_ristretto255_scalar_random(out.baseAddress!.assumingMemoryBound(to: UInt8.self))
        }
    }

    /// `scalar * point` on ristretto255, `scalar` read as a 256-bit little-endian integer. Throws
    /// ``CryptoError/Code/invalidKey`` when `point` is not a canonical encoding,
    /// ``CryptoError/Code/weakSharedSecret`` when the result is the identity.
    static func ristrettoScalarMult(scalar: SecretBytes, point: [UInt8]) throws -> SecretBytes {
        ensureInitialized()
        guard scalar.count == ristrettoLength, point.count == ristrettoLength else {
            throw CryptoError(.invalidKey, "ristretto255 scalars and elements are 32 bytes")
        }
        let valid = point.withUnsafeBytes {
            crypto_core_ristretto255_is_valid_point($0.baseAddress!.assumingMemoryBound(to: UInt8.self))
        }
        guard valid == 1 else {
            throw CryptoError(.invalidKey, "the peer's share is not a valid ristretto255 element")
        }
        // crypto_scalarmult_ristretto255 ignores bit 255 of the scalar; reduced modulo L first, any
        // 32-byte scalar (a test vector's, say) means the integer it encodes. Ours are reduced already.
        let reduced = SecretBytes(count: ristrettoLength) { out in
            let wide = SecretBytes(count: 2 * ristrettoLength) { wide in
                scalar.withUnsafeBytes { wide.copyMemory(from: $0) }  // the upper half stays zero
            }
            wide.withUnsafeBytes {
                crypto_core_ristretto255_scalar_reduce(out.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                                       $0.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
        }
        return try SecretBytes(count: ristrettoLength) { out in
            let status = reduced.withUnsafeBytes { n in
                point.withUnsafeBytes { p in
                    crypto_scalarmult_ristretto255(out.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                                   n.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                                   p.baseAddress!.assumingMemoryBound(to: UInt8.self))
                }
            }
            try check(status, .weakSharedSecret, "the ristretto255 result is the identity element")
        }
    }
}
