/// Seals whole messages into frames for one direction of a stream (TCP) path.
///
/// Wire format, one frame:
///
///     +--------------------+------------------------------------------------+
///     | length (2, BE u16) | sealed body: ChaCha20-Poly1305(flag || chunk)  |
///     +--------------------+------------------------------------------------+
///                           `length` bytes, 17…65 535 (including the 16-byte tag)
///
/// `flag` is 1 on a message's last frame and 0 before it, so a message larger than one frame
/// (65 518 plaintext bytes) is split and the opener joins it. The nonce is an implicit counter
/// (one per frame, both sides count); the 2-byte length is the associated data, so a changed
/// length fails authentication.
public struct StreamSealer: Sendable {
    /// Largest sealed body in a frame.
    public static let maximumFrameBody = 65_535
    /// Largest plaintext chunk in one frame: body − tag − flag.
    public static let maximumChunk = maximumFrameBody - Sodium.aeadTagLength - 1

    let key: SecretBytes
    let messageLimit: UInt64
    /// Frames sealed so far (the next nonce).
    public private(set) var framesSent: UInt64 = 0

    init(key: SecretBytes, policy: RekeyPolicy = .wireGuard) {
        self.key = key
        self.messageLimit = policy.rejectAfterMessages
    }

    /// Returns the bytes to write (one or more frames) for one whole message (may be empty).
    /// Throws ``CryptoError/Code/rekeyRequired`` when the frame counter would pass its limit;
    /// nothing is sealed then.
    public mutating func seal(_ message: [UInt8]) throws -> [UInt8] {
        let chunkCount = max(1, (message.count + Self.maximumChunk - 1) / Self.maximumChunk)
        guard messageLimit - framesSent >= UInt64(chunkCount) else {
            throw CryptoError(.rekeyRequired, "this key sealed its maximum number of stream frames; run a new handshake")
        }
        let total = message.count + chunkCount * (2 + 1 + Sodium.aeadTagLength)
        return [UInt8](unsafeUninitializedCapacity: total) { out, initialized in
            var written = 0
            message.withUnsafeBytes { source in
                key.withUnsafeBytes { k in
                    for index in 0..<chunkCount {
                        let start = index * Self.maximumChunk
                        let end = min(start + Self.maximumChunk, message.count)
                        let bodyLength = end - start + 1 + Sodium.aeadTagLength
                        out[written] = UInt8(bodyLength >> 8)
                        out[written + 1] = UInt8(bodyLength & 0xFF)
                        // Plaintext (flag || chunk) is laid out in place, then encrypted in place.
                        out[written + 2] = index == chunkCount - 1 ? 1 : 0
                        let raw = UnsafeMutableRawBufferPointer(out)
                        if end > start {
                            UnsafeMutableRawBufferPointer(rebasing: raw[(written + 3)..<(written + 3 + end - start)])
                                .copyMemory(from: UnsafeRawBufferPointer(rebasing: source[start..<end]))
                        }
                        let plaintext = UnsafeRawBufferPointer(rebasing: raw[(written + 2)..<(written + 3 + end - start)])
                        Sodium.aeadSeal(key: k, counter: framesSent,
                                        associatedData: UnsafeRawBufferPointer(rebasing: raw[written..<(written + 2)]),
                                        plaintext: plaintext,
                                        into: UnsafeMutableRawBufferPointer(rebasing: raw[(written + 2)..<(written + 2 + bodyLength)]))
                        framesSent += 1
                        written += 2 + bodyLength
                    }
                }
            }
            initialized = written
        }
    }
}
