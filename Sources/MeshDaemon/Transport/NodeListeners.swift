#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Logging
import NIOCore
import NIOPosix

/// A TCP connection between daemons, read as preamble + frames.
typealias WireConnection = NIOAsyncChannel<WireFrame, ByteBuffer>
/// The node's TCP listener.
typealias ListenerSocket = NIOAsyncChannel<WireConnection, Never>

/// `SocketTransport`'s listening sockets: TCP and UDP bound on one port, on the node's loop.
enum NodeListeners {
    /// Binds TCP, then UDP on the port TCP got. With port 0 a few ports are tried until UDP's
    /// is free too.
    ///
    /// The UDP channel is a plain channel, not an `NIOAsyncChannel`: `DatagramReceiveHandler`
    /// takes every read, and the async wrapper's end-of-read handling alone cost ≈ 3 000
    /// instructions per datagram received.
    static func bind(_ listen: DaemonConfiguration.Endpoint, on loop: any EventLoop,
                     receiver: any DatagramReceiver,
                     accepted: AcceptedConnections) async throws -> (ListenerSocket, any Channel, DaemonConfiguration.Endpoint) {
        let host = listen.host
        var lastError: (any Error)?
        for _ in 0..<8 {
            let server: ListenerSocket
            do {
                server = try await ServerBootstrap(group: loop)
                    .serverChannelOption(.backlog, value: 256)
                    .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                    .serverChannelInitializer { channel in
                        channel.eventLoop.makeCompletedFuture {
                            try channel.pipeline.syncOperations.addHandler(ErrorAbsorbingHandler())
                        }
                    }
                    .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
                    .bind(host: host, port: listen.port) { channel in
                        channel.eventLoop.makeCompletedFuture {
                            try channel.pipeline.syncOperations.addHandler(
                                ByteToMessageHandler(WireFrameDecoder(expectsPreamble: true)))
                            let connection = try WireConnection(wrappingChannelSynchronously: channel)
                            accepted.hold(connection)
                            return connection
                        }
                    }
            } catch {
                throw NodeError(code: .listen, message: "cannot listen on \(listen): \(ListenFailure.describe(error, transport: "TCP"))")
            }
            let port = server.channel.localAddress?.port ?? listen.port
            do {
                let udp = try await DatagramBootstrap(group: loop)
                    // Up to 32 datagrams per recvmmsg, so a burst costs few system calls; one
                    // recvmmsg per readiness (epoll is level-triggered: what is left is read on
                    // the next loop turn), so a lone datagram does not cost a second, empty one.
                    .channelOption(ChannelOptions.datagramVectorReadMessageCount, value: 32)
                    .channelOption(ChannelOptions.maxMessagesPerRead, value: 1)
                    .channelOption(ChannelOptions.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 32 * 2048))
                    .channelOption(ChannelOptions.socketOption(.so_rcvbuf), value: Self.datagramReceiveBuffer)
                    // What NIO holds of datagrams the kernel has not taken: past `high` the
                    // channel reads not writable and the node drops datagrams instead of queueing
                    // them (see `SocketTransport.canSendDatagrams`). Above a batch of realtime datagrams
                    // written before one flush.
                    .channelOption(ChannelOptions.writeBufferWaterMark, value: Self.datagramWriteWaterMark)
                    .channelInitializer { channel in
                        channel.eventLoop.makeCompletedFuture {
                            // The reader first: a datagram then passes no other handler; errors
                            // pass it on to the absorber.
                            try channel.pipeline.syncOperations.addHandler(DatagramReceiveHandler(receiver: receiver))
                            try channel.pipeline.syncOperations.addHandler(ErrorAbsorbingHandler())
                        }
                    }
                    .bind(host: host, port: port).get()
                return (server, udp, DaemonConfiguration.Endpoint(host: host, port: port))
            } catch {
                try? await server.executeThenClose { _ in }
                await accepted.closeLeftovers()
                lastError = error
                if listen.port != 0 { break }
            }
        }
        throw NodeError(code: .listen, message: "cannot listen on \(listen): \(lastError.map { ListenFailure.describe($0, transport: "UDP") } ?? "UDP: no free port")")
    }

    /// NIO's queue of unsent datagrams: writable again below 512 KiB, not writable above 1 MiB.
    static let datagramWriteWaterMark = ChannelOptions.Types.WriteBufferWaterMark(low: 512 << 10, high: 1 << 20)

    /// Receive buffer asked for on the UDP socket: 4 MiB (the kernel doubles it for its own
    /// bookkeeping and caps it at `net.core.rmem_max`). The default (≈ 208 KiB) overflowed
    /// in bursts on loopback — about 2 % of realtime datagrams and acks in `mesh-bench`,
    /// each loss a durable fallback copy. Memory is used only while datagrams wait.
    static let datagramReceiveBuffer: SocketOptionValue = 4 << 20

    /// Logs the UDP receive buffer the kernel granted; a notice, with the fix, when
    /// `net.core.rmem_max` held it below what was asked (Debian's default allows ≈ 208 KiB).
    static func noteReceiveBuffer(_ udp: any Channel, logger: Logger) async {
        guard let granted = try? await udp.getOption(ChannelOptions.socketOption(.so_rcvbuf)).get() else { return }
        // Linux reports twice the size set (the other half is its bookkeeping).
        let metadata: Logger.Metadata = ["udp.receive_buffer": "\(granted)", "asked": "\(2 * Self.datagramReceiveBuffer)"]
        if granted < 2 * Self.datagramReceiveBuffer {
            logger.notice("the UDP receive buffer is smaller than asked (net.core.rmem_max caps it): bursts of realtime datagrams may overflow it and reach the peer's app late, through the durable queue; `sysctl -w net.core.rmem_max=4194304` lifts the cap", metadata: metadata)
        } else {
            logger.debug("UDP receive buffer", metadata: metadata)
        }
    }
}
