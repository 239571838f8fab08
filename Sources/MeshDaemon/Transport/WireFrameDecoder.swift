import NIOCore

/// One unit read from a daemon-to-daemon stream path (a TCP connection, the relay's stream).
public enum WireFrame: Sendable, Equatable {
    /// The connection's preamble (listener side only).
    case preamble(ConnectionKind)
    /// One frame body (the length prefix removed).
    case frame([UInt8])
}

/// Splits a daemon-to-daemon TCP byte stream into its preamble and frames.
///
/// ```
/// listener side:  'S' 'M' 1 kind | len(2, BE) body(len) | len body | ...
/// connector side:                  len(2, BE) body(len) | len body | ...
/// ```
/// The same framing carries the handshake and pairing messages and, after the handshake, the
/// sealed stream frames (whose own first two bytes are this length). A bad preamble is an
/// error, and the connection closes without a reply. Buffering is bounded by one frame
/// (at most 65 537 bytes).
struct WireFrameDecoder: ByteToMessageDecoder {
    typealias InboundOut = WireFrame

    /// Whether the next bytes are the preamble.
    private var expectsPreamble: Bool

    /// A decoder for the accepting side (`expectsPreamble`) or the connecting side.
    init(expectsPreamble: Bool) { self.expectsPreamble = expectsPreamble }

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        if expectsPreamble {
            guard let bytes = buffer.readBytes(length: 4) else { return .needMoreData }
            guard let kind = ConnectionKind(preamble: bytes) else { throw WireFormatError(what: "connection preamble") }
            expectsPreamble = false
            context.fireChannelRead(wrapInboundOut(.preamble(kind)))
            return .continue
        }
        guard let length = buffer.getInteger(at: buffer.readerIndex, as: UInt16.self) else { return .needMoreData }
        guard buffer.readableBytes >= 2 + Int(length) else { return .needMoreData }
        buffer.moveReaderIndex(forwardBy: 2)
        guard let body = buffer.readBytes(length: Int(length)) else { return .needMoreData }
        context.fireChannelRead(wrapInboundOut(.frame(body)))
        return .continue
    }

    mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        // A partial frame at EOF is dropped: nothing half-read is acted on.
        while try decode(context: context, buffer: &buffer) == .continue {}
        return .needMoreData
    }
}

extension WireFrame {
    /// `len(2, BE) | body` for a pre-channel message; throws when the body is too long.
    static func encode(_ body: [UInt8]) throws(WireFormatError) -> [UInt8] {
        guard body.count <= Int(UInt16.max) else { throw WireFormatError(what: "frame longer than 65535 bytes") }
        var writer = WireWriter(capacity: body.count + 2)
        writer.u16(UInt16(body.count))
        writer.raw(body)
        return writer.bytes
    }
}

extension WireFrame {
    /// The frame bodies in `bytes`, whole wire frames as `ChannelPath.send` takes them (each a
    /// 2-byte big-endian length and its body), for paths that carry frames one by one (the
    /// relay, the simulator). Throws `WireFormatError` on a short or truncated frame.
    public static func bodies(in bytes: ByteBuffer) throws -> [[UInt8]] {
        var buffer = bytes
        var bodies: [[UInt8]] = []
        while buffer.readableBytes > 0 {
            guard let length = buffer.readInteger(as: UInt16.self),
                  let body = buffer.readBytes(length: Int(length)) else { throw WireFormatError(what: "wire frame") }
            bodies.append(body)
        }
        return bodies
    }
}
