/// Noise SymmetricState (spec §5.2) for SHA-256: the chaining key `ck`, the handshake hash `h`
/// and the CipherState used to encrypt handshake payloads.
struct NoiseSymmetricState: Sendable {
    static let hashLength = 32

    private(set) var chainingKey: SecretBytes
    private(set) var handshakeHash: [UInt8]
    private(set) var cipher = NoiseCipherState()

    /// `InitializeSymmetric(protocol_name)`: `h` is the name zero-padded to 32 bytes when it
    /// fits, otherwise SHA-256(name); `ck = h`.
    init(protocolName: String) {
        let name = Array(protocolName.utf8)
        if name.count <= Self.hashLength {
            handshakeHash = name + [UInt8](repeating: 0, count: Self.hashLength - name.count)
        } else {
            handshakeHash = Sodium.sha256(name)
        }
        chainingKey = SecretBytes(handshakeHash)
    }

    /// `MixKey(ikm)`: ck, temp_k = HKDF(ck, ikm, 2); the cipher gets temp_k with nonce 0.
    mutating func mixKey(_ inputKeyMaterial: SecretBytes) {
        let outputs = Self.hkdf(chainingKey: chainingKey, inputKeyMaterial: inputKeyMaterial, outputs: 2)
        chainingKey = outputs[0]
        cipher = NoiseCipherState(key: outputs[1])
    }

    /// `MixHash(data)`: h = SHA-256(h || data).
    mutating func mixHash(_ data: [UInt8]) {
        var next = [UInt8](repeating: 0, count: Self.hashLength)
        handshakeHash.withUnsafeBytes { h in
            data.withUnsafeBytes { d in next.withUnsafeMutableBytes { Sodium.sha256([h, d], into: $0) } }
        }
        handshakeHash = next
    }

    /// `MixKeyAndHash(ikm)` for psk tokens: ck, temp_h, temp_k = HKDF(ck, ikm, 3).
    mutating func mixKeyAndHash(_ inputKeyMaterial: SecretBytes) {
        let outputs = Self.hkdf(chainingKey: chainingKey, inputKeyMaterial: inputKeyMaterial, outputs: 3)
        chainingKey = outputs[0]
        var tempHash = outputs[1].unsafeCopy
        mixHash(tempHash)
        Sodium.zero(&tempHash)
        cipher = NoiseCipherState(key: outputs[2])
    }

    /// `EncryptAndHash(plaintext)`: encrypt with h as associated data, then mix the ciphertext in.
    mutating func encryptAndHash(_ plaintext: [UInt8]) throws -> [UInt8] {
        let ciphertext = try cipher.encrypt(associatedData: handshakeHash, plaintext: plaintext)
        mixHash(ciphertext)
        return ciphertext
    }

    /// `DecryptAndHash(ciphertext)`.
    mutating func decryptAndHash(_ ciphertext: [UInt8]) throws -> [UInt8] {
        let plaintext = try cipher.decrypt(associatedData: handshakeHash, ciphertext: ciphertext)
        mixHash(ciphertext)
        return plaintext
    }

    /// `Split()`: the two transport keys, (initiator→responder, responder→initiator).
    func splitKeys() -> (SecretBytes, SecretBytes) {
        let outputs = Self.hkdf(chainingKey: chainingKey, inputKeyMaterial: SecretBytes([]), outputs: 2)
        return (outputs[0], outputs[1])
    }

    /// Noise `HKDF(chaining_key, input_key_material, num_outputs)` (spec §4.3) with HMAC-SHA-256:
    /// temp_key = HMAC(ck, ikm); output1 = HMAC(temp_key, 0x01);
    /// output_i = HMAC(temp_key, output_{i-1} || i).
    static func hkdf(chainingKey: SecretBytes, inputKeyMaterial: SecretBytes, outputs: Int) -> [SecretBytes] {
        let tempKey = SecretBytes(count: hashLength) { out in
            chainingKey.withUnsafeBytes { ck in
                inputKeyMaterial.withUnsafeBytes { ikm in Sodium.hmacSHA256(key: ck, [ikm], into: out) }
            }
        }
        var results: [SecretBytes] = []
        results.reserveCapacity(outputs)
        for index in 1...outputs {
            var counter = UInt8(index)
            let previous = results.last
            let output = SecretBytes(count: hashLength) { out in
                tempKey.withUnsafeBytes { key in
                    withUnsafeBytes(of: &counter) { c in
                        if let previous {
                            previous.withUnsafeBytes { p in Sodium.hmacSHA256(key: key, [p, c], into: out) }
                        } else {
                            Sodium.hmacSHA256(key: key, [c], into: out)
                        }
                    }
                }
            }
            results.append(output)
        }
        return results
    }
}
