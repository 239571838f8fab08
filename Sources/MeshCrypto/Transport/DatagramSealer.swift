/// Seals datagrams for one direction of one channel.
///
/// Wire format of a sealed datagram (after whatever header the caller puts in front and passes
/// as associated data):
///
///     +----------------------+-----------------------------+-----------+
///     | counter (8, LE u64)  | ChaCha20-Poly1305 ciphertext| tag (16)  |
///     +----------------------+-----------------------------+-----------+
///
/// The counter is the nonce (4 zero bytes || counter LE), starts at 0 and is never reused:
/// at ``RekeyPolicy/rejectAfterMessages`` ``seal(_:associatedData:)`` throws
/// ``CryptoError/Code/rekeyRequired`` and the caller must run a new handshake.
public struct DatagramSealer: Sendable {
    /// Bytes a sealed datagram adds to its plaintext: 8 (counter) + 16 (tag).
    public static let overhead = 8 + Sodium.aeadTagLength

    let key: SecretBytes
    let messageLimit: UInt64
    let rekeyThreshold: UInt64
    /// How many datagrams were sealed with this key (the next counter).
    public private(set) var messagesSent: UInt64 = 0

    /// `messageLimit` is configurable so tests can reach it; production uses the policy's limits.
    init(key: SecretBytes, policy: RekeyPolicy = .wireGuard) {
        self.key = key
        self.messageLimit = policy.rejectAfterMessages
        self.rekeyThreshold = policy.rekeyAfterMessages
    }

    /// Whether enough messages were sent that a new handshake should start (soft limit).
    public var needsRekey: Bool { messagesSent >= rekeyThreshold }

    /// Seals `plaintext`, authenticating `associatedData` (e.g. the caller's clear header) too.
    /// Throws ``CryptoError/Code/rekeyRequired`` when the counter reached its limit.
    public mutating func seal(_ plaintext: [UInt8], associatedData: [UInt8]) throws -> [UInt8] {
        let total = plaintext.count + Self.overhead
        var failure: CryptoError?
        let sealed = [UInt8](unsafeUninitializedCapacity: total) { out, initialized in
            do {
                initialized = try plaintext.withUnsafeBytes { pt in
                    try associatedData.withUnsafeBytes { ad in
                        try seal(pt, associatedData: ad, into: UnsafeMutableRawBufferPointer(out))
                    }
                }
            } catch {
                failure = error as? CryptoError
                initialized = 0
            }
        }
        if let failure { throw failure }
        return sealed
    }

    /// Allocation-free form: seals into `output`, which must hold at least
    /// `plaintext.count + overhead` bytes, and returns the number of bytes written.
    /// `output` must not overlap `plaintext`.
    public mutating func seal(_ plaintext: UnsafeRawBufferPointer, associatedData: UnsafeRawBufferPointer,
                              into output: UnsafeMutableRawBufferPointer) throws -> Int {
        guard messagesSent < messageLimit else {
            throw CryptoError(.rekeyRequired, "this key sealed its maximum number of datagrams; run a new handshake")
        }
        let total = plaintext.count + Self.overhead
        guard output.count >= total else {
            throw CryptoError(.malformedMessage, "output buffer holds \(output.count) bytes, sealing needs \(total)")
        }
        let counter = messagesSent
        output.storeBytes(of: counter.littleEndian, toByteOffset: 0, as: UInt64.self)
        key.withUnsafeBytes { k in
            Sodium.aeadSeal(key: k, counter: counter, associatedData: associatedData, plaintext: plaintext,
                            into: UnsafeMutableRawBufferPointer(rebasing: output[8..<total]))
        }
        messagesSent = counter + 1
        return total
    }
}
