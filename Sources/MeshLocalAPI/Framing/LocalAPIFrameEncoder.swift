import NIOCore

/// Writes `LocalAPIFrame`s in the layout drawn on `LocalAPIFrameDecoder`.
///
/// The encoder does not check the body length against a maximum: the sender is trusted code,
/// and the receiver's decoder enforces its own limit.
public struct LocalAPIFrameEncoder: MessageToByteEncoder, Sendable {
    /// Frames to write.
    public typealias OutboundIn = LocalAPIFrame

    /// Creates an encoder.
    public init() {}

    /// Appends the header and body of `frame` to `out`.
    public func encode(data frame: LocalAPIFrame, out: inout ByteBuffer) throws {
        Self.write(frame, to: &out)
    }

    /// Appends the header and body of `frame` to `out`; usable without a channel.
    public static func write(_ frame: LocalAPIFrame, to out: inout ByteBuffer) {
        out.reserveCapacity(minimumWritableBytes: frame.wireLength)
        writeHeader(kind: frame.kind, operation: frame.operation, flags: frame.flags, requestID: frame.requestID,
                    bodyLength: frame.body.readableBytes, to: &out)
        var body = frame.body
        out.writeBuffer(&body)
    }

    /// Appends a frame header announcing `bodyLength` bytes of body, which the caller writes
    /// next (for frames built in place instead of from a `LocalAPIFrame`).
    public static func writeHeader(kind: LocalAPIFrame.Kind, operation: LocalAPIOperation, flags: LocalAPIFrame.Flags,
                                   requestID: UInt32, bodyLength: Int, to out: inout ByteBuffer) {
        // The header in one write: seven integer writes cost ≈ 1 000 instructions per frame, and
        // the daemon writes one frame per reply and per delivered event.
        let length = UInt32(truncatingIfNeeded: bodyLength)
        out.writeWithUnsafeMutableBytes(minimumWritableBytes: LocalAPIWireFormat.headerLength) { raw in
            raw.storeBytes(of: LocalAPIWireFormat.magic.bigEndian, toByteOffset: 0, as: UInt16.self)
            raw.storeBytes(of: LocalAPIWireFormat.version, toByteOffset: 2, as: UInt8.self)
            raw.storeBytes(of: kind.rawValue, toByteOffset: 3, as: UInt8.self)
            raw.storeBytes(of: operation.rawValue.bigEndian, toByteOffset: 4, as: UInt16.self)
            raw.storeBytes(of: flags.rawValue.bigEndian, toByteOffset: 6, as: UInt16.self)
            raw.storeBytes(of: requestID.bigEndian, toByteOffset: 8, as: UInt32.self)
            raw.storeBytes(of: length.bigEndian, toByteOffset: 12, as: UInt32.self)
            return LocalAPIWireFormat.headerLength
        }
    }
}
