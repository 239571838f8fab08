import Foundation
import NIOCore
import SessionMesh

/// Reads the fields of a binary data body (`LocalAPIFrame.Flags.binaryBody`) strictly.
///
/// Field encodings:
///
/// ```
/// u8    1 byte
/// u64   8 bytes, big-endian
/// str   u8 length (0–255) | that many bytes of valid UTF-8
/// msg   the rest of the body: one SessionWireCodec message (envelope, snapshot or request),
///       which must fill it exactly (the codec rejects trailing bytes)
/// ```
///
/// Every failure is a `LocalAPIErrorBody` with code `bad-request` that names the operation and
/// the field, never the bytes (a payload may be private).
public struct LocalAPIBinaryReader {
    private var buffer: ByteBuffer
    /// The operation whose body is read (named in errors).
    public let operation: LocalAPIOperation

    /// Reads `body` of `operation`.
    public init(_ body: ByteBuffer, operation: LocalAPIOperation) {
        self.buffer = body
        self.operation = operation
    }

    /// Bytes not read yet.
    public var remaining: Int { buffer.readableBytes }

    /// Reads one byte.
    public mutating func u8(_ field: String) throws(LocalAPIErrorBody) -> UInt8 {
        guard let value = buffer.readInteger(as: UInt8.self) else { throw truncated(field, needs: 1) }
        return value
    }

    /// Reads a big-endian unsigned 64-bit integer.
    public mutating func u64(_ field: String) throws(LocalAPIErrorBody) -> UInt64 {
        guard let value = buffer.readInteger(as: UInt64.self) else { throw truncated(field, needs: 8) }
        return value
    }

    /// Reads a `u8 length | UTF-8` string; invalid UTF-8 is an error.
    public mutating func string(_ field: String) throws(LocalAPIErrorBody) -> String {
        let length = Int(try u8(field + " length"))
        guard buffer.readableBytes >= length else { throw truncated(field, needs: length) }
        // Not `String(validating:as:)`: its unspecialized generic path (and a generic
        // `utf8.elementsEqual` walk before this) cost ≈ 3 % of an app's CPU at 60 000 events/s.
        let text = buffer.withUnsafeReadableBytes { raw in String(exactUTF8: UnsafeRawBufferPointer(rebasing: raw.prefix(length))) }
        guard let text else {
            throw LocalAPIDataError.badRequest(operation, "field '\(field)' is not valid UTF-8")
        }
        buffer.moveReaderIndex(forwardBy: length)
        return text
    }

    /// Reads the rest of the body as an envelope.
    public mutating func envelope(_ field: String = "envelope") throws(LocalAPIErrorBody) -> AnySessionSyncEnvelope {
        defer { buffer.moveReaderIndex(to: buffer.writerIndex) }
        do { return try buffer.withUnsafeReadableBytes { try SessionWireCodec.decodeEnvelope($0) } } catch { throw wire(field, error) }
    }

    /// Reads the rest of the body as a snapshot.
    public mutating func snapshot(_ field: String = "snapshot") throws(LocalAPIErrorBody) -> AnySessionSyncSnapshot {
        defer { buffer.moveReaderIndex(to: buffer.writerIndex) }
        do { return try buffer.withUnsafeReadableBytes { try SessionWireCodec.decodeSnapshot($0) } } catch { throw wire(field, error) }
    }

    /// Reads the rest of the body as a snapshot request.
    public mutating func snapshotRequest(_ field: String = "request") throws(LocalAPIErrorBody) -> SessionSnapshotRequest {
        defer { buffer.moveReaderIndex(to: buffer.writerIndex) }
        do { return try buffer.withUnsafeReadableBytes { try SessionWireCodec.decodeSnapshotRequest($0) } } catch { throw wire(field, error) }
    }

    private func truncated(_ field: String, needs: Int) -> LocalAPIErrorBody {
        LocalAPIDataError.badRequest(operation, "the body ends inside field '\(field)' (needs \(needs) bytes, \(buffer.readableBytes) left)")
    }

    private func wire(_ field: String, _ error: any Error) -> LocalAPIErrorBody {
        let detail = (error as? SessionWireError)?.description ?? "\(error)"
        return LocalAPIDataError.badRequest(operation, "field '\(field)' is not a valid message: \(detail)")
    }
}
