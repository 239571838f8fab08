/// A frame that cannot be read: the stream is out of step, so the daemon answers with an error
/// frame (when it can) and closes the connection.
public struct LocalAPIFramingError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What was wrong.
    public enum Reason: Sendable, Equatable {
        /// The first two bytes were not `SM`.
        case badMagic(UInt16)
        /// The version byte is not one this build speaks.
        case unsupportedVersion(UInt8)
        /// The kind byte is not 1–4.
        case unknownKind(UInt8)
        /// A flag bit this version does not define is set.
        case unknownFlags(UInt16)
        /// The body length exceeds the limit.
        case frameTooLarge(length: Int, maximum: Int)
        /// The stream ended inside a frame.
        case truncated(bufferedBytes: Int)
    }

    /// What was wrong.
    public var reason: Reason
    /// The request id from the header when the header could be read, else 0.
    public var requestID: UInt32

    /// Creates an error.
    public init(_ reason: Reason, requestID: UInt32 = 0) {
        self.reason = reason
        self.requestID = requestID
    }

    /// The wire error code this maps to (see `LocalAPIErrorBody`).
    public var code: String {
        switch reason {
        case .badMagic: return LocalAPIErrorBody.Code.badMagic
        case .unsupportedVersion: return LocalAPIErrorBody.Code.unsupportedVersion
        case .unknownKind, .unknownFlags, .truncated: return LocalAPIErrorBody.Code.badFrame
        case .frameTooLarge: return LocalAPIErrorBody.Code.frameTooLarge
        }
    }

    /// A sentence for the client.
    public var description: String {
        switch reason {
        case .badMagic(let found):
            return "not a SessionMesh local API frame: expected magic 0x534D ('SM'), got 0x\(String(found, radix: 16))"
        case .unsupportedVersion(let found):
            return "framing version \(found) is not supported; this daemon speaks version \(LocalAPIWireFormat.version)"
        case .unknownKind(let found):
            return "unknown frame kind \(found); expected 1 (request)"
        case .unknownFlags(let found):
            return "unknown flag bits 0x\(String(found, radix: 16)) in the frame header"
        case .frameTooLarge(let length, let maximum):
            return "frame body of \(length) bytes exceeds the maximum of \(maximum) bytes"
        case .truncated(let count):
            return "the connection ended inside a frame (\(count) bytes buffered)"
        }
    }

    /// The error body to send back.
    public var errorBody: LocalAPIErrorBody { LocalAPIErrorBody(code: code, message: description) }
}
