import CSodium

extension Sodium {
    /// ChaCha20-Poly1305 (IETF) key length.
    static let aeadKeyLength = 32
    /// Poly1305 tag length.
    static let aeadTagLength = 16

    /// The 96-bit IETF nonce used everywhere in MeshCrypto: 32 zero bits followed by the 64-bit
    /// counter in little-endian order (the Noise ChaChaPoly nonce, also WireGuard's).
    @inline(__always)
    private static func withNonce<R>(_ counter: UInt64, _ body: (UnsafePointer<UInt8>) -> R) -> R {
        var nonce = (UInt32(0), UInt32(truncatingIfNeeded: counter).littleEndian,
                     UInt32(truncatingIfNeeded: counter >> 32).littleEndian)
        return withUnsafeBytes(of: &nonce) { body($0.baseAddress!.assumingMemoryBound(to: UInt8.self)) }
    }

    /// Seals `plaintext` into `output` (exactly `plaintext.count + 16` bytes: ciphertext || tag).
    /// `output` may alias `plaintext` (in-place encryption is supported by libsodium).
    @inline(__always)
    static func aeadSeal(key: UnsafeRawBufferPointer, counter: UInt64, associatedData: UnsafeRawBufferPointer,
                         plaintext: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) {
        precondition(key.count == aeadKeyLength && output.count == plaintext.count + aeadTagLength,
                     "AEAD buffer sizes")  // internal misuse only
        withNonce(counter) { nonce in
            _ = crypto_aead_chacha20poly1305_ietf_encrypt(
                output.baseAddress!.assumingMemoryBound(to: UInt8.self), nil,
                plaintext.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(plaintext.count),
                associatedData.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(associatedData.count),
                nil, nonce, key.baseAddress!.assumingMemoryBound(to: UInt8.self))
        }
    }

    /// Opens `ciphertext` (ciphertext || tag) into `output` (exactly `ciphertext.count - 16` bytes).
    /// Throws ``CryptoError/Code/authenticationFailed`` when the tag does not verify; `output`
    /// is zeroed then.
    @inline(__always)
    static func aeadOpen(key: UnsafeRawBufferPointer, counter: UInt64, associatedData: UnsafeRawBufferPointer,
                         ciphertext: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) throws {
        guard ciphertext.count >= aeadTagLength else {
            throw CryptoError(.malformedMessage, "sealed data is shorter than the 16-byte authentication tag")
        }
        precondition(key.count == aeadKeyLength && output.count == ciphertext.count - aeadTagLength,
                     "AEAD buffer sizes")  // internal misuse only
        let status = withNonce(counter) { nonce in
            crypto_aead_chacha20poly1305_ietf_decrypt(
                output.baseAddress?.assumingMemoryBound(to: UInt8.self), nil, nil,
                ciphertext.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(ciphertext.count),
                associatedData.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(associatedData.count),
                nonce, key.baseAddress!.assumingMemoryBound(to: UInt8.self))
        }
        guard status == 0 else {
            zero(output)
            throw CryptoError(.authenticationFailed, "the data was forged, corrupted or sealed with another key")
        }
    }

    /// Array convenience over ``aeadSeal(key:counter:associatedData:plaintext:into:)``.
    static func aeadSeal(key: SecretBytes, counter: UInt64, associatedData: [UInt8], plaintext: [UInt8]) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: plaintext.count + aeadTagLength) { out, initialized in
            key.withUnsafeBytes { k in
                associatedData.withUnsafeBytes { ad in
                    plaintext.withUnsafeBytes { pt in
                        aeadSeal(key: k, counter: counter, associatedData: ad, plaintext: pt,
                                 into: UnsafeMutableRawBufferPointer(out))
                    }
                }
            }
            initialized = plaintext.count + aeadTagLength
        }
    }

    /// Array convenience over ``aeadOpen(key:counter:associatedData:ciphertext:into:)``.
    static func aeadOpen(key: SecretBytes, counter: UInt64, associatedData: [UInt8], ciphertext: [UInt8]) throws -> [UInt8] {
        guard ciphertext.count >= aeadTagLength else {
            throw CryptoError(.malformedMessage, "sealed data is shorter than the 16-byte authentication tag")
        }
        var out = [UInt8](repeating: 0, count: ciphertext.count - aeadTagLength)
        try key.withUnsafeBytes { k in
            try associatedData.withUnsafeBytes { ad in
                try ciphertext.withUnsafeBytes { ct in
                    try out.withUnsafeMutableBytes {
                        try aeadOpen(key: k, counter: counter, associatedData: ad, ciphertext: ct, into: $0)
                    }
                }
            }
        }
        return out
    }
}
