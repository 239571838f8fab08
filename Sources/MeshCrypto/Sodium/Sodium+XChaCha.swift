import CSodium

extension Sodium {
    /// XChaCha20-Poly1305 (IETF) nonce length: 192 bits, so random nonces never repeat in practice.
    static let xchachaNonceLength = 24

    /// Seals `plaintext` with XChaCha20-Poly1305 under `key` and `nonce`; returns ciphertext || tag.
    static func xchachaSeal(key: SecretBytes, nonce: [UInt8], associatedData: [UInt8], plaintext: [UInt8]) -> [UInt8] {
        ensureInitialized()
        precondition(key.count == aeadKeyLength && nonce.count == xchachaNonceLength, "XChaCha20 key and nonce sizes")  // internal misuse only
        return [UInt8](unsafeUninitializedCapacity: plaintext.count + aeadTagLength) { out, initialized in
            key.withUnsafeBytes { k in
                associatedData.withUnsafeBytes { ad in
                    plaintext.withUnsafeBytes { pt in
                        nonce.withUnsafeBytes { n in
                            _ = crypto_aead_xchacha20poly1305_ietf_encrypt(
                                out.baseAddress!, nil,
                                pt.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(pt.count),
                                ad.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(ad.count),
                                nil, n.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                k.baseAddress!.assumingMemoryBound(to: UInt8.self))
                        }
                    }
                }
            }
            initialized = plaintext.count + aeadTagLength
        }
    }

    /// Opens what ``xchachaSeal(key:nonce:associatedData:plaintext:)`` sealed. Throws
    /// ``CryptoError/Code/malformedMessage`` when shorter than the tag and
    /// ``CryptoError/Code/authenticationFailed`` when the tag does not verify.
    static func xchachaOpen(key: SecretBytes, nonce: [UInt8], associatedData: [UInt8], ciphertext: [UInt8]) throws -> [UInt8] {
        ensureInitialized()
        guard ciphertext.count >= aeadTagLength else {
            throw CryptoError(.malformedMessage, "sealed data is shorter than the 16-byte authentication tag")
        }
        precondition(key.count == aeadKeyLength && nonce.count == xchachaNonceLength, "XChaCha20 key and nonce sizes")  // internal misuse only
        var out = [UInt8](repeating: 0, count: ciphertext.count - aeadTagLength)
        let status = key.withUnsafeBytes { k in
            associatedData.withUnsafeBytes { ad in
                ciphertext.withUnsafeBytes { ct in
                    nonce.withUnsafeBytes { n in
                        out.withUnsafeMutableBytes { o in
                            crypto_aead_xchacha20poly1305_ietf_decrypt(
                                o.baseAddress?.assumingMemoryBound(to: UInt8.self), nil, nil,
                                ct.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(ct.count),
                                ad.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(ad.count),
                                n.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                k.baseAddress!.assumingMemoryBound(to: UInt8.self))
                        }
                    }
                }
            }
        }
        guard status == 0 else {
            zero(&out)
            throw CryptoError(.authenticationFailed, "the data was forged, corrupted or sealed with another key")
        }
        return out
    }
}
