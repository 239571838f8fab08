import NIOCore

/// Splits the local API byte stream into `LocalAPIFrame`s.
///
/// Every frame is a 16-byte header followed by `length` bytes of body. All integers are
/// big-endian (network order):
///
/// ```
///  0                   1                   2                   3
///  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// |     magic 0x53 'S' 0x4D 'M'   |  version = 1  |     kind      |
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// |        operation code         |             flags             |
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// |                          request id                           |
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// |                         body length                           |
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// |                body (length bytes): UTF-8 JSON,               |
/// |          or binary when flags bit 0 (binaryBody) is set       |
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// ```
///
/// - kind: 1 request, 2 reply, 3 event, 4 error.
/// - flags: bit 0 `binaryBody`; every other bit must be zero.
/// - body length: at most `maximumBodyLength` (1 MiB by default).
///
/// The decoder throws `LocalAPIFramingError` as soon as the bytes it has show a frame is bad
/// (a wrong magic is caught from the first two bytes; an oversized length from the header,
/// before any body is buffered), so a peer can never make it buffer more than one maximum frame.
/// After an error the stream is out of step: the owner must close the connection.
public struct LocalAPIFrameDecoder: ByteToMessageDecoder, Sendable {
    /// Decoded frames.
    public typealias InboundOut = LocalAPIFrame

    /// The largest body accepted, in bytes.
    public let maximumBodyLength: Int
    /// Told before each frame is passed on whether another whole frame is buffered behind it.
    public let lookahead: LocalAPIFrameLookahead?

    /// Creates a decoder that refuses bodies longer than `maximumBodyLength` bytes, and keeps
    /// `lookahead` (if any) up to date for the handler after it.
    public init(maximumBodyLength: Int = LocalAPIWireFormat.defaultMaximumBodyLength,
                lookahead: LocalAPIFrameLookahead? = nil) {
        self.maximumBodyLength = maximumBodyLength
        self.lookahead = lookahead
    }

    /// Decodes one frame if a whole one is buffered.
    public mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let frame = try Self.parse(&buffer, maximumBodyLength: maximumBodyLength) else {
            lookahead?.partialFrameBuffered = buffer.readableBytes > 0
            return .needMoreData
        }
        if let lookahead {
            let another = Self.holdsWholeFrame(buffer)
            lookahead.anotherFrameBuffered = another
            lookahead.partialFrameBuffered = !another && buffer.readableBytes > 0
        }
        context.fireChannelRead(Self.wrapInboundOut(frame))
        return .continue
    }

    /// Whether `buffer` starts with a whole frame (header and body), judged by its length field.
    static func holdsWholeFrame(_ buffer: ByteBuffer) -> Bool {
        guard buffer.readableBytes >= LocalAPIWireFormat.headerLength,
              let length = buffer.getInteger(at: buffer.readerIndex + 12, as: UInt32.self) else { return false }
        return UInt64(buffer.readableBytes) >= UInt64(LocalAPIWireFormat.headerLength) + UInt64(length)
    }

    /// Decodes what is left at end of stream; a partial frame is an error.
    public mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer,
                                    seenEOF: Bool) throws -> DecodingState {
        while let frame = try Self.parse(&buffer, maximumBodyLength: maximumBodyLength) {
            if let lookahead { lookahead.anotherFrameBuffered = Self.holdsWholeFrame(buffer) }
            context.fireChannelRead(Self.wrapInboundOut(frame))
        }
        if buffer.readableBytes > 0 {
            let count = buffer.readableBytes
            buffer.moveReaderIndex(forwardBy: count)
            throw LocalAPIFramingError(.truncated(bufferedBytes: count))
        }
        return .needMoreData
    }

    /// Reads one frame from the front of `buffer`, or returns nil (consuming nothing) when more
    /// bytes are needed. Throws as soon as the buffered bytes prove the frame bad.
    ///
    /// Usable without a channel, e.g. by a blocking client.
    public static func parse(_ buffer: inout ByteBuffer,
                             maximumBodyLength: Int = LocalAPIWireFormat.defaultMaximumBodyLength)
        throws(LocalAPIFramingError) -> LocalAPIFrame? {
        let start = buffer.readerIndex
        if let magic = buffer.getInteger(at: start, as: UInt16.self), magic != LocalAPIWireFormat.magic {
            throw LocalAPIFramingError(.badMagic(magic))
        }
        guard buffer.readableBytes >= LocalAPIWireFormat.headerLength,
              let magicAndVersion = buffer.getInteger(at: start, as: UInt32.self),
              let operationAndFlags = buffer.getInteger(at: start + 4, as: UInt32.self),
              let requestID = buffer.getInteger(at: start + 8, as: UInt32.self),
              let length = buffer.getInteger(at: start + 12, as: UInt32.self)
        else { return nil }

        let version = UInt8(truncatingIfNeeded: magicAndVersion >> 8)
        guard version == LocalAPIWireFormat.version else {
            throw LocalAPIFramingError(.unsupportedVersion(version), requestID: requestID)
        }
        let kindByte = UInt8(truncatingIfNeeded: magicAndVersion)
        guard let kind = LocalAPIFrame.Kind(rawValue: kindByte) else {
            throw LocalAPIFramingError(.unknownKind(kindByte), requestID: requestID)
        }
        let flags = LocalAPIFrame.Flags(rawValue: UInt16(truncatingIfNeeded: operationAndFlags))
        guard flags.subtracting(.known).isEmpty else {
            throw LocalAPIFramingError(.unknownFlags(flags.subtracting(.known).rawValue), requestID: requestID)
        }
        guard UInt64(length) <= UInt64(maximumBodyLength) else {
            throw LocalAPIFramingError(.frameTooLarge(length: Int(length), maximum: maximumBodyLength),
                                       requestID: requestID)
        }
        let bodyLength = Int(length)
        guard buffer.readableBytes >= LocalAPIWireFormat.headerLength + bodyLength else { return nil }
        buffer.moveReaderIndex(forwardBy: LocalAPIWireFormat.headerLength)
        guard let body = buffer.readSlice(length: bodyLength) else { return nil }
        let operation = LocalAPIOperation(rawValue: UInt16(truncatingIfNeeded: operationAndFlags >> 16))
        return LocalAPIFrame(kind: kind, operation: operation, flags: flags, requestID: requestID, body: body)
    }
}

/// What a `LocalAPIFrameDecoder` knows, as it passes a frame on, about the bytes behind it: the
/// handler after it can tell the last frame of a read burst from one that others follow at once
/// (`meshd` sends a lone realtime item before it answers, and packs the items of a burst).
///
/// Shared by one connection's decoder and handler, on its event loop only.
public final class LocalAPIFrameLookahead: @unchecked Sendable {
    /// Another whole frame is buffered behind the one being handled (false for the last one;
    /// bytes of a frame not yet complete do not count).
    public var anotherFrameBuffered = false
    /// Bytes of a frame not yet complete are buffered (after the last whole frame was passed
    /// on): the client is in the middle of sending one.
    public var partialFrameBuffered = false

    /// Creates a lookahead that has seen nothing.
    public init() {}
}
