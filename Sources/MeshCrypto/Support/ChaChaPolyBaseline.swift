import CSodium

/// Raw libsodium ChaCha20-Poly1305 (IETF) calls, for benchmarks that compare MeshCrypto with the
/// library it wraps. Not for protecting data: the key is fixed and no nonce is tracked.
///
/// Each ``sealAndOpen(counter:)`` makes exactly one `crypto_aead_chacha20poly1305_ietf_encrypt`
/// and one `..._decrypt` call on preallocated buffers — the floor the datagram path is measured
/// against.
public struct ChaChaPolyBaseline: Sendable {
    private var key = [UInt8](repeating: 0x42, count: 32)
    private var plaintext: [UInt8]
    private var ciphertext: [UInt8]
    private var opened: [UInt8]
    private let associatedData: [UInt8] = [1, 2, 3, 4]

    /// Buffers for messages of `messageSize` bytes.
    public init(messageSize: Int) {
        Sodium.ensureInitialized()
        plaintext = [UInt8](repeating: 0xA5, count: messageSize)
        ciphertext = [UInt8](repeating: 0, count: messageSize + 16)
        opened = [UInt8](repeating: 0, count: messageSize)
    }

    /// Seals the message with nonce `counter`, then opens it; false when opening failed.
    public mutating func sealAndOpen(counter: UInt64) -> Bool {
        var nonce = (UInt32(0), UInt32(truncatingIfNeeded: counter).littleEndian,
                     UInt32(truncatingIfNeeded: counter >> 32).littleEndian)
        let plaintextCount = UInt64(plaintext.count), ciphertextCount = UInt64(ciphertext.count)
        let adCount = UInt64(associatedData.count)
        return withUnsafeBytes(of: &nonce) { n in
            let npub = n.baseAddress!.assumingMemoryBound(to: UInt8.self)
            return key.withUnsafeBufferPointer { k in
                associatedData.withUnsafeBufferPointer { ad in
                    plaintext.withUnsafeBufferPointer { m in
                        ciphertext.withUnsafeMutableBufferPointer { c in
                            opened.withUnsafeMutableBufferPointer { o in
                                _ = crypto_aead_chacha20poly1305_ietf_encrypt(
                                    c.baseAddress!, nil, m.baseAddress!, plaintextCount,
                                    ad.baseAddress!, adCount, nil, npub, k.baseAddress!)
                                return crypto_aead_chacha20poly1305_ietf_decrypt(
                                    o.baseAddress!, nil, nil, c.baseAddress!, ciphertextCount,
                                    ad.baseAddress!, adCount, npub, k.baseAddress!) == 0
                            }
                        }
                    }
                }
            }
        }
    }
}

extension ChannelKeys {
    /// A connected pair of channel keys from a real `Noise_IKpsk2` handshake between two fresh
    /// identities — for benchmarks and examples that need a working channel without I/O.
    public static func loopbackPair() throws -> (initiator: ChannelKeys, responder: ChannelKeys) {
        let name = "Noise_IKpsk2_25519_ChaChaPoly_SHA256"
        let alice = X25519KeyPair.generate(), bob = X25519KeyPair.generate()
        let psk = SecretBytes.random(count: 32)
        var initiator = try NoiseHandshake(protocolName: name, initiator: true, localStatic: alice,
                                           remoteStatic: bob.publicKey, preSharedKeys: [psk])
        var responder = try NoiseHandshake(protocolName: name, initiator: false, localStatic: bob, preSharedKeys: [psk])
        _ = try responder.readMessage(try initiator.writeMessage(payload: []))
        _ = try initiator.readMessage(try responder.writeMessage(payload: []))
        return (try initiator.channelKeys(), try responder.channelKeys())
    }
}
