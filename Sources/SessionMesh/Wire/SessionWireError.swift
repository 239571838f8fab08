/// Why bytes could not be decoded (or a value could not be encoded) by ``SessionWireCodec``.
///
/// Carries what was wrong and the byte offset where it was noticed; never any payload bytes.
/// A daemon receiving one should drop the frame (or close the connection) and stay alive.
public struct SessionWireError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of problem.
    public enum Code: String, Sendable, Hashable {
        /// The input ended before the message did.
        case truncated
        /// The first two bytes are not `"SM"`.
        case badMagic
        /// The format version byte is not one this build reads.
        case unsupportedFormatVersion
        /// The kind byte is not envelope, snapshot or snapshot request.
        case unknownKind
        /// A valid message of another kind than the caller asked for.
        case unexpectedKind
        /// A varint longer than needed or than 10 bytes, or above 2^64−1.
        case malformedVarint
        /// A string, payload or list is longer than the configured limit.
        case limitExceeded
        /// A string is not valid UTF-8.
        case invalidUTF8
        /// A timestamp is NaN or infinite.
        case nonFiniteTimestamp
        /// A flags byte has bits set that this version does not define.
        case reservedFlagsSet
        /// Snapshot peer entries are not in strictly ascending byte order (or repeat).
        case unsortedPeers
        /// Bytes remain after the end of the message.
        case trailingBytes
        /// A number is outside what its field allows (e.g. a negative protocol version).
        case valueOutOfRange
    }

    /// The kind of problem.
    public var code: Code
    /// Byte offset into the input where it was noticed (0 when encoding).
    public var offset: Int
    /// Which field, and the numbers involved.
    public var detail: String

    /// Creates an error.
    public init(_ code: Code, offset: Int, detail: String) {
        self.code = code
        self.offset = offset
        self.detail = detail
    }

    /// A sentence naming the problem, the field and the offset.
    public var description: String { "session wire format: \(code.rawValue) at byte \(offset): \(detail)" }
}
