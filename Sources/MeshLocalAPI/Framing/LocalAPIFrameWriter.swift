import NIOCore

/// Encodes outbound `LocalAPIFrame`s as `LocalAPIFrameEncoder` does, but the frames written
/// between two flushes share one buffer and one channel write.
///
/// `meshd` writes a reply per request and an event per delivered envelope; at high rates
/// most of them are written in the same loop turn. `MessageToByteHandler` would allocate a
/// buffer and queue a separate write for each; here they are appended to one buffer that goes
/// out at the next `flush` (or as soon as it holds `eagerWriteBytes`, so the channel's
/// writability — which the slow-reader policy reads — never lags by more than that).
///
/// Promises are kept: each frame's promise completes with the write of the buffer that carried
/// it. Frames not yet flushed when the channel is closed fail, as unflushed writes always do.
public final class LocalAPIFrameWriter: ChannelOutboundHandler, RemovableChannelHandler {
    /// Frames to write.
    public typealias OutboundIn = LocalAPIFrame
    /// Encoded frames, several per buffer.
    public typealias OutboundOut = ByteBuffer

    /// Buffered bytes at which the buffer is handed to the channel before the flush.
    public static let eagerWriteBytes = 16 * 1024

    private var pending: ByteBuffer?
    private var promises: [EventLoopPromise<Void>] = []

    /// Creates a writer with nothing buffered.
    public init() {}

    /// Appends `data`'s frame to the buffer of this flush.
    public func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        append(unwrapOutboundIn(data), promise: promise, context: context)
    }

    /// Appends `frame` as `write` does, for a handler that holds this writer and its
    /// `context` and calls it on the event loop, skipping the pipeline between them (wrapping
    /// the frame in `NIOAny` and a dynamic cast at each handler: thousands of instructions per
    /// frame, paid for every event `meshd` delivers). Frames appended this way and frames
    /// written through the pipeline keep the order of the calls.
    public func append(_ frame: LocalAPIFrame, promise: EventLoopPromise<Void>? = nil, context: ChannelHandlerContext) {
        // The promise rides with the buffer this frame goes into (an eager write takes both).
        if let promise { promises.append(promise) }
        var body = frame.body
        appendFrame(kind: frame.kind, operation: frame.operation, flags: frame.flags, requestID: frame.requestID,
                    bodyLength: body.readableBytes, context: context) { $0.writeBuffer(&body) }
    }

    /// Appends a frame whose body `writeBody` writes straight into the buffer (exactly
    /// `bodyLength` bytes), without a `LocalAPIFrame` and its own body buffer in between.
    public func appendFrame(kind: LocalAPIFrame.Kind, operation: LocalAPIOperation, flags: LocalAPIFrame.Flags = [],
                            requestID: UInt32, bodyLength: Int, context: ChannelHandlerContext,
                            writeBody: (inout ByteBuffer) -> Void) {
        let wireLength = LocalAPIWireFormat.headerLength + bodyLength
        var buffer = pending.take() ?? context.channel.allocator.buffer(capacity: max(wireLength, 512))
        buffer.reserveCapacity(minimumWritableBytes: wireLength)
        LocalAPIFrameEncoder.writeHeader(kind: kind, operation: operation, flags: flags, requestID: requestID,
                                         bodyLength: bodyLength, to: &buffer)
        let bodyStart = buffer.writerIndex
        writeBody(&buffer)
        assert(buffer.writerIndex - bodyStart == bodyLength, "the body written does not match the header's length")
        pending = buffer
        if buffer.readableBytes >= Self.eagerWriteBytes { writePending(context: context) }
    }

    /// Hands the buffered frames to the channel and flushes it.
    public func flush(context: ChannelHandlerContext) {
        writePending(context: context)
        context.flush()
    }

    /// Drops the frames not flushed yet and fails their promises (as a channel fails every
    /// write not flushed when it closes), then closes.
    public func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        pending = nil
        let waiting = promises
        promises = []
        for each in waiting { each.fail(ChannelError.ioOnClosedChannel) }
        context.close(mode: mode, promise: promise)
    }

    /// Hands what is buffered on to the channel when the handler leaves the pipeline.
    public func handlerRemoved(context: ChannelHandlerContext) {
        writePending(context: context)
    }

    private func writePending(context: ChannelHandlerContext) {
        guard let buffer = pending.take() else { return }
        let waiting = promises
        promises = []
        context.write(NIOAny(buffer), promise: Self.combined(waiting, on: context.eventLoop))
    }

    /// One promise completing `promises` (nil for none).
    private static func combined(_ promises: [EventLoopPromise<Void>], on loop: any EventLoop) -> EventLoopPromise<Void>? {
        switch promises.count {
        case 0: return nil
        case 1: return promises[0]
        default:
            let combined = loop.makePromise(of: Void.self)
            for each in promises { combined.futureResult.cascade(to: each) }
            return combined
        }
    }
}

extension Optional {
    /// Returns the wrapped value and leaves nil behind (so a buffer taken out stays unique).
    fileprivate mutating func take() -> Wrapped? {
        defer { self = nil }
        return self
    }
}
