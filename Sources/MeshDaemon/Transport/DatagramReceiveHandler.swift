import NIOCore

/// Hands each received datagram to its receiver (the node) synchronously, on the node's loop:
/// no async sequence, no task switch between the socket read and `MeshNode.handleDatagram`.
///
/// Sits on the UDP channel of `SocketTransport` (bound on the node's loop) and consumes every
/// read.
final class DatagramReceiveHandler: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>

    private let receiver: any DatagramReceiver

    init(receiver: any DatagramReceiver) { self.receiver = receiver }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        // Opened where NIO received it: no copy of the datagram first.
        envelope.data.withUnsafeReadableBytes { received in
            receiver.receive(received, from: .socket(envelope.remoteAddress))
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        receiver.burstEnded()
        context.fireChannelReadComplete()
    }
}
