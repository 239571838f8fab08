import NIOCore

/// Hands each received datagram to its node synchronously, on the node's loop: no async
/// sequence, no task switch between the socket read and `MeshNode.handleDatagram`.
///
/// Sits on the node's UDP channel (bound on the node's loop) and consumes every read.
final class DatagramReceiveHandler: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>

    private let node: MeshNode

    init(node: MeshNode) { self.node = node }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        // Opened where NIO received it: no copy of the datagram first.
        envelope.data.withUnsafeReadableBytes { received in
            // Used synchronously on this thread, inside the buffer's scope.
            nonisolated(unsafe) let bytes = received
            node.onLoop { $0.handleDatagram(bytes, from: envelope.remoteAddress) }
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        node.onLoop { $0.handOff.burstEnded() }
        context.fireChannelReadComplete()
    }
}
