import NIOCore

/// Hands a connection's outbound buffers to its socket directly while its channel holds none of
/// them, and to the channel otherwise — for the one handler that writes a local API connection
/// (`LocalAPIFrameWriter` in the daemon, `LocalAPIClientHandler` in the client).
///
/// NIO's write and flush path costs ≈ 5 000 instructions per flush; a reader that keeps up
/// gets each buffer with one `send(2)` instead. What the socket does not take at once goes to
/// the channel, and later buffers follow it there until the channel has written it (each such
/// write is counted until its promise completes), so the bytes keep their order on the wire and a
/// slow reader meets the channel's writability limits as before. A buffer with a promise always
/// goes through the channel (the promise completes with its write).
///
/// Without an output it only passes writes and flushes on. Use on the channel's event loop only.
package final class LocalAPIDirectWriter {
    /// Where buffers may be written without the channel (nil: always through the channel).
    package var output: (any LocalAPIDirectOutput)?
    /// Buffers handed to the channel whose write has not completed.
    private var inChannel = 0

    package init(output: (any LocalAPIDirectOutput)? = nil) { self.output = output }

    /// Writes `buffer` (on `context`, the writing handler's) to the socket if it can, else to
    /// the channel; `promise` completes when the channel wrote it.
    package func write(_ buffer: ByteBuffer, promise: EventLoopPromise<Void>?, context: ChannelHandlerContext) {
        guard let output else {
            context.write(NIOAny(buffer), promise: promise)
            return
        }
        var buffer = buffer
        if inChannel == 0, promise == nil {
            let written = buffer.withUnsafeReadableBytes { output.write($0) }
            if written >= buffer.readableBytes { return }
            if written > 0 { buffer.moveReaderIndex(forwardBy: written) }
        }
        let tracked = context.eventLoop.makePromise(of: Void.self)
        inChannel += 1
        tracked.futureResult.assumeIsolated().whenComplete { [self] _ in inChannel -= 1 }
        if let promise { tracked.futureResult.cascade(to: promise) }
        context.write(NIOAny(buffer), promise: tracked)
    }

    /// Flushes the channel when it holds anything of this writer's (always without an output).
    package func flush(context: ChannelHandlerContext) {
        if output == nil || inChannel > 0 { context.flush() }
    }
}

/// A socket a `LocalAPIDirectWriter` may write to directly, bypassing its channel's write path.
///
/// Called on the channel's event loop only.
public protocol LocalAPIDirectOutput: AnyObject {
    /// Writes what it can of `bytes` without blocking: the count written (0 when the socket
    /// takes nothing now), or -1 when it cannot be used (closed, failed); the writer then hands
    /// the bytes left to the channel, which reports the failure as usual.
    func write(_ bytes: UnsafeRawBufferPointer) -> Int
}
