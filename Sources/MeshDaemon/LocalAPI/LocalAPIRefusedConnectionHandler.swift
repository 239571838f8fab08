import MeshLocalAPI
import NIOCore

/// Serves a refused local API connection (too many open) after its error frame was written:
/// the daemon's side is shut for writing, what the client sends is read and dropped, and the
/// connection closes when the client closes its side or after `linger`.
///
/// Closing at once lost the error: a client that had just sent a request got EPIPE or
/// ECONNRESET and reported "closed the connection before answering" instead of the reason.
final class LocalAPIRefusedConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = Any
    typealias OutboundOut = LocalAPIFrame

    /// How long a refused connection may stay open at most.
    static let linger = TimeAmount.milliseconds(500)

    private let error: LocalAPIErrorBody

    /// A handler that answers with `error` (request id 0) once the connection is active.
    init(error: LocalAPIErrorBody) { self.error = error }

    func channelActive(context: ChannelHandlerContext) {
        let channel = context.channel
        context.eventLoop.scheduleTask(in: Self.linger) { channel.close(promise: nil) }
        let body = (try? LocalAPIJSON.encode(error)) ?? ByteBuffer()
        context.writeAndFlush(wrapOutboundOut(LocalAPIFrame(kind: .error, operation: .unspecified, requestID: 0, body: body)))
            .whenComplete { _ in channel.close(mode: .output, promise: nil) }
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .some(.inputClosed) = event as? ChannelEvent { context.close(promise: nil) }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
