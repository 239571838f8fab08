import NIOCore
import NIOPosix

/// A TCP relay on another loopback address (e.g. 127.0.0.2) to a node's port on 127.0.0.1:
/// the node is then reachable at a second address, as a device that moved to a new one.
final class LoopbackRelay: Sendable {
    let port: Int
    private let server: any Channel

    private init(port: Int, server: any Channel) {
        self.port = port
        self.server = server
    }

    /// Listens on `host`:0 and relays every connection to 127.0.0.1:`target`.
    static func start(on host: String, to target: Int, group: any EventLoopGroup) async throws -> LoopbackRelay {
        let server = try await ServerBootstrap(group: group)
            .childChannelInitializer { inbound in
                ClientBootstrap(group: inbound.eventLoop)
                    .connect(host: "127.0.0.1", port: target)
                    .flatMap { outbound in
                        let (toOutbound, toInbound) = RelayHandler.pair()
                        return inbound.pipeline.addHandler(toOutbound).flatMap {
                            outbound.pipeline.addHandler(toInbound)
                        }
                    }
            }
            .bind(host: host, port: 0).get()
        return LoopbackRelay(port: server.localAddress?.port ?? 0, server: server)
    }

    /// Stops listening (relayed connections close with their ends).
    func stop() async {
        try? await server.close()
    }
}

/// One side of a relayed connection: what it reads is written to its partner's channel.
private final class RelayHandler: ChannelDuplexHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private var partner: RelayHandler?
    private var context: ChannelHandlerContext?

    static func pair() -> (RelayHandler, RelayHandler) {
        let first = RelayHandler(), second = RelayHandler()
        first.partner = second
        second.partner = first
        return (first, second)
    }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        partner = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let bytes = unwrapInboundIn(data)
        guard let other = partner?.context else { return }
        other.writeAndFlush(NIOAny(bytes), promise: nil)     // both ends share one loop
    }

    func channelInactive(context: ChannelHandlerContext) {
        partner?.context?.close(promise: nil)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
