/// Opens datagrams for one direction of one channel, rejecting forgeries and replays.
///
/// Order of checks: length; the counter against the replay window (a cheap early reject of
/// duplicates and too-old counters); authentication; only then does the window record the
/// counter. A forged datagram therefore never moves the window. Reordering up to
/// ``windowSize`` (4032) packets behind the newest is accepted.
public struct DatagramOpener: Sendable {
    /// How far behind the newest accepted counter a datagram may still arrive.
    public static let windowSize = Int(ReplayWindow.windowSize)

    let key: SecretBytes
    let messageLimit: UInt64
    private var window = ReplayWindow()
    /// How many datagrams were accepted.
    public private(set) var messagesReceived: UInt64 = 0

    init(key: SecretBytes, policy: RekeyPolicy = .wireGuard) {
        self.key = key
        self.messageLimit = policy.rejectAfterMessages
    }

    /// Authenticates and decrypts `datagram` (counter || ciphertext || tag), with the same
    /// `associatedData` the sender passed. Throws ``CryptoError`` with code
    /// `malformedMessage` (too short), `replayedCounter`, `counterTooOld` or `authenticationFailed`.
    public mutating func open(_ datagram: [UInt8], associatedData: [UInt8]) throws -> [UInt8] {
        guard datagram.count >= DatagramSealer.overhead else {
            throw CryptoError(.malformedMessage, "datagram shorter than the 24-byte counter and tag")
        }
        var failure: CryptoError?
        let opened = [UInt8](unsafeUninitializedCapacity: datagram.count - DatagramSealer.overhead) { out, initialized in
            do {
                initialized = try datagram.withUnsafeBytes { d in
                    try associatedData.withUnsafeBytes { ad in
                        try open(d, associatedData: ad, into: UnsafeMutableRawBufferPointer(out))
                    }
                }
            } catch {
                failure = error as? CryptoError
                initialized = 0
            }
        }
        if let failure { throw failure }
        return opened
    }

    /// Allocation-free form: opens into `output` (at least `datagram.count - overhead` bytes) and
    /// returns the plaintext length.
    public mutating func open(_ datagram: UnsafeRawBufferPointer, associatedData: UnsafeRawBufferPointer,
                              into output: UnsafeMutableRawBufferPointer) throws -> Int {
        guard datagram.count >= DatagramSealer.overhead else {
            throw CryptoError(.malformedMessage, "datagram shorter than the 24-byte counter and tag")
        }
        let length = datagram.count - DatagramSealer.overhead
        guard output.count >= length else {
            throw CryptoError(.malformedMessage, "output buffer holds \(output.count) bytes, opening needs \(length)")
        }
        let counter = UInt64(littleEndian: datagram.loadUnaligned(fromByteOffset: 0, as: UInt64.self))
        guard counter < messageLimit else {
            throw CryptoError(.counterTooOld, "datagram counter is beyond this key's limit")
        }
        switch window.check(counter) {
        case .duplicate: throw CryptoError(.replayedCounter, "datagram counter \(counter) was already received")
        case .tooOld: throw CryptoError(.counterTooOld, "datagram counter \(counter) is older than the replay window")
        case .fresh: break
        }
        try key.withUnsafeBytes { k in
            try Sodium.aeadOpen(key: k, counter: counter, associatedData: associatedData,
                                ciphertext: UnsafeRawBufferPointer(rebasing: datagram[8...]),
                                into: UnsafeMutableRawBufferPointer(rebasing: output[0..<length]))
        }
        window.accept(counter)
        messagesReceived += 1
        return length
    }
}
