import NIOCore

/// Keeps transient socket errors (an ICMP-refused datagram, an accept that hit `EMFILE`) from
/// reaching the handlers after it: the accept loop's async stream would end, and the UDP
/// channel's tail would log them as unhandled.
///
/// Only for the long-lived listener and UDP channels; NIO itself closes a channel whose error
/// is fatal, and the loop then ends normally.
final class ErrorAbsorbingHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = NIOAny

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // Absorbed on purpose: nothing to tell a remote party, nothing the loop can do.
    }
}
