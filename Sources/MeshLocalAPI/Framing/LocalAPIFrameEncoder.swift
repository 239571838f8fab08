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
        out.writeInteger(LocalAPIWireFormat.magic)
        out.writeInteger(LocalAPIWireFormat.version)
        out.writeInteger(frame.kind.rawValue)
        out.writeInteger(frame.operation.rawValue)
        out.writeInteger(frame.flags.rawValue)
        out.writeInteger(frame.requestID)
        out.writeInteger(UInt32(truncatingIfNeeded: frame.body.readableBytes))
        var body = frame.body
        out.writeBuffer(&body)
    }
}
