import NIOCore
import SessionMesh

/// Writes the fields of a binary data body in the layout `LocalAPIBinaryReader` reads.
///
/// Encoding fails (with a `LocalAPIErrorBody` of code `invalid-argument`) only for values the
/// layout cannot carry: a string over 255 UTF-8 bytes, or a message the core codec refuses
/// (e.g. a payload over its limit).
public struct LocalAPIBinaryWriter {
    /// The bytes written so far.
    public private(set) var buffer: ByteBuffer
    /// The operation whose body is written (named in errors).
    public let operation: LocalAPIOperation

    /// Starts an empty body of `operation`.
    public init(operation: LocalAPIOperation, capacity: Int = 128) {
        self.operation = operation
        self.buffer = ByteBuffer()
        buffer.reserveCapacity(capacity)
    }

    /// Writes one byte.
    public mutating func u8(_ value: UInt8) { buffer.writeInteger(value) }

    /// Writes a big-endian unsigned 64-bit integer.
    public mutating func u64(_ value: UInt64) { buffer.writeInteger(value) }

    /// Writes a `u8 length | UTF-8` string.
    public mutating func string(_ value: String, field: String) throws(LocalAPIErrorBody) {
        let bytes = Array(value.utf8)
        guard bytes.count <= Int(UInt8.max) else {
            throw LocalAPIErrorBody(code: LocalAPIErrorBody.Code.invalidArgument,
                                    message: "\(operation.name): field '\(field)' is \(bytes.count) bytes; at most 255 fit")
        }
        buffer.writeInteger(UInt8(bytes.count))
        buffer.writeBytes(bytes)
    }

    /// The body of a `send` or `snapshot.publish` request, checked against the limits: the body
    /// length one frame may carry (the daemon answers a longer frame with `frame-too-large` and
    /// closes the connection, ending the client's other requests and attachments on it) and
    /// `LocalAPIWireFormat.maximumMessageBytes` for the encoded message written last (the
    /// daemon refuses a longer one with `invalid-argument`). Refused here, before anything is
    /// written, with `invalid-argument`; `contents` says what made it long, for the message.
    public func requestBody(messageStart: Int, contents: @autoclosure () -> String) throws(LocalAPIErrorBody) -> ByteBuffer {
        let message = buffer.readableBytes - messageStart
        guard message <= LocalAPIWireFormat.maximumMessageBytes, buffer.readableBytes <= LocalAPIWireFormat.defaultMaximumBodyLength else {
            throw LocalAPIDataError.invalidArgument(
                operation, "the message is \(message) bytes (\(contents())), over the \(LocalAPIWireFormat.maximumMessageBytes) bytes one local API frame may carry; send a smaller payload")
        }
        return buffer
    }

    /// Writes a core-codec message as the rest of the body.
    public mutating func message(_ message: SessionWireCodec.Message, field: String) throws(LocalAPIErrorBody) {
        do {
            buffer.writeBytes(try SessionWireCodec.encode(message))
        } catch {
            let detail = (error as? SessionWireError)?.description ?? "\(error)"
            throw LocalAPIErrorBody(code: LocalAPIErrorBody.Code.invalidArgument,
                                    message: "\(operation.name): field '\(field)' cannot be encoded: \(detail)")
        }
    }
}
