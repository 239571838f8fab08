/// Reassembles and opens the frames of one direction of a stream path (see ``StreamSealer``).
///
/// Feed it bytes as they arrive, in any split. A forged, reordered or corrupt frame throws; the
/// caller must then close the connection (the opener stays failed: every later call throws).
/// A joined message larger than ``maximumMessageSize`` also throws, before more is buffered.
public struct StreamOpener: Sendable {
    /// Default cap on a joined message: 16 MiB.
    public static let defaultMaximumMessageSize = 16 << 20

    let key: SecretBytes
    let messageLimit: UInt64
    /// The largest joined message accepted (default 16 MiB); set it before feeding bytes.
    public var maximumMessageSize: Int
    /// Frames opened so far (the next nonce).
    public private(set) var framesReceived: UInt64 = 0
    private var buffer: [UInt8] = []
    private var readIndex = 0
    private var partial: [UInt8] = []
    private var failure: CryptoError?

    init(key: SecretBytes, maximumMessageSize: Int = StreamOpener.defaultMaximumMessageSize,
         policy: RekeyPolicy = .wireGuard) {
        self.key = key
        self.maximumMessageSize = maximumMessageSize
        self.messageLimit = policy.rejectAfterMessages
    }

    /// Feeds received bytes; returns every complete message they finish (may be empty).
    /// Throws ``CryptoError`` (`authenticationFailed`, `malformedMessage`, `messageTooLarge`,
    /// `rekeyRequired`) and stays failed afterwards.
    public mutating func feed(_ bytes: [UInt8]) throws -> [[UInt8]] {
        if let failure { throw failure }
        do {
            return try process(bytes)
        } catch let error as CryptoError {
            failure = error
            buffer = []
            Sodium.zero(&partial)
            partial = []
            throw error
        }
    }

    private mutating func process(_ bytes: [UInt8]) throws -> [[UInt8]] {
        buffer += bytes
        var messages: [[UInt8]] = []
        while buffer.count - readIndex >= 2 {
            let bodyLength = Int(buffer[readIndex]) << 8 | Int(buffer[readIndex + 1])
            guard bodyLength >= 1 + Sodium.aeadTagLength else {
                throw CryptoError(.malformedMessage, "stream frame of \(bodyLength) bytes is shorter than flag and tag")
            }
            guard buffer.count - readIndex >= 2 + bodyLength else { break }
            guard framesReceived < messageLimit else {
                throw CryptoError(.rekeyRequired, "this key opened its maximum number of stream frames")
            }
            let chunkLength = bodyLength - Sodium.aeadTagLength - 1
            guard partial.count + chunkLength <= maximumMessageSize else {
                throw CryptoError(.messageTooLarge,
                                  "a stream message exceeds the \(maximumMessageSize)-byte limit; the connection must close")
            }
            var plaintext = [UInt8](repeating: 0, count: bodyLength - Sodium.aeadTagLength)
            let frameStart = readIndex
            try buffer.withUnsafeBytes { raw in
                try key.withUnsafeBytes { k in
                    try plaintext.withUnsafeMutableBytes { out in
                        try Sodium.aeadOpen(key: k, counter: framesReceived,
                                            associatedData: UnsafeRawBufferPointer(rebasing: raw[frameStart..<(frameStart + 2)]),
                                            ciphertext: UnsafeRawBufferPointer(rebasing: raw[(frameStart + 2)..<(frameStart + 2 + bodyLength)]),
                                            into: out)
                    }
                }
            }
            framesReceived += 1
            readIndex += 2 + bodyLength
            switch plaintext[0] {
            case 0: partial += plaintext[1...]
            case 1:
                partial += plaintext[1...]
                messages.append(partial)
                partial = []
            default:
                throw CryptoError(.malformedMessage, "stream frame has an unknown flag")
            }
            Sodium.zero(&plaintext)
        }
        // Drop consumed bytes once they dominate the buffer, keeping appends amortised O(1).
        if readIndex > 0 && readIndex * 2 >= buffer.count {
            buffer.removeFirst(readIndex)
            readIndex = 0
        }
        return messages
    }
}
