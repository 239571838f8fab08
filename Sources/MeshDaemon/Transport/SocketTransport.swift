import Logging
import NIOCore
import NIOPosix

/// The direct transport: TCP and UDP bound on one port, over NIO, everything on the node's loop.
///
/// Stream paths are TCP connections (`TCPStreamPath`, no Nagle, framed by `WireFrameDecoder`);
/// datagrams go through one UDP socket, received in batches of up to 32 per recvmmsg(2) and
/// handed to the node synchronously (`DatagramReceiveHandler`), sent batched with one
/// sendmmsg(2) per flush. `NodeListeners` binds the sockets.
///
/// The sockets are set once, by `bind`, before anything is sent or accepted (the node starts
/// using the transport after `bind` returned); afterwards every datagram call runs on the
/// node's loop, so the batching flag needs no lock.
public final class SocketTransport: NodeTransport, @unchecked Sendable {
    private let logger: Logger
    private var server: ListenerSocket?
    private var udp: (any Channel)?
    /// Batched datagrams were written on `udp` and wait for `flushDatagrams`.
    private var datagramsWaiting = false
    /// Accepted connections until the accept loop takes them (see `AcceptedConnections`).
    private let accepted = AcceptedConnections()

    /// A transport that logs its socket notices to `logger`.
    public init(logger: Logger) { self.logger = logger }

    public var maximumDatagramBytes: Int { MeshNode.maximumDatagramBytes }

    public func bind(_ listen: DaemonConfiguration.Endpoint, on loop: any EventLoop,
                     receiver: any DatagramReceiver) async throws -> DaemonConfiguration.Endpoint {
        let (server, udp, bound) = try await NodeListeners.bind(listen, on: loop, receiver: receiver, accepted: accepted)
        self.server = server
        self.udp = udp
        await NodeListeners.noteReceiveBuffer(udp, logger: logger)
        return bound
    }

    public func acceptStreams(_ serve: @escaping @Sendable (any ChannelPath, inout PathFrames) async -> Void) async throws {
        guard let server else { return }
        let accepted = accepted
        do {
            try await server.executeThenClose { inbound in
                try await withThrowingDiscardingTaskGroup { group in
                    for try await connection in inbound {
                        accepted.take(connection)
                        group.addTask {
                            try? await connection.executeThenClose { frames, _ in
                                var pathFrames = PathFrames(frames.makeAsyncIterator())
                                await serve(TCPStreamPath(connection.channel), &pathFrames)
                            }
                        }
                    }
                }
            }
        } catch {
            await accepted.closeLeftovers()
            throw error
        }
        // Connections accepted as the listener closed never reached the loop: closed here.
        await accepted.closeLeftovers()
    }

    public func dialStream<Result: Sendable>(to address: PathAddress, kind: ConnectionKind, timeout: TimeAmount,
                                             _ body: (any ChannelPath, inout PathFrames) async throws -> Result) async throws -> Result {
        guard let loop = udp?.eventLoop else { throw PathConnectError(address: address, reason: "the transport is not bound") }
        let connection: WireConnection
        do {
            connection = try await Self.connect(to: address, timeout: timeout, on: loop)
        } catch let error as PathConnectError {
            throw error
        } catch {
            throw PathConnectError(address: address, reason: "\(error)", underlying: error)
        }
        return try await connection.executeThenClose { frames, _ in
            // Not flushed: it leaves with the first frames written, in the same segment.
            connection.channel.write(ByteBuffer(bytes: kind.preamble), promise: nil)
            var pathFrames = PathFrames(frames.makeAsyncIterator())
            return try await body(TCPStreamPath(connection.channel), &pathFrames)
        }
    }

    /// Opens a TCP connection (no Nagle) to `address` on `loop` with the wire frame decoder
    /// installed; throws when it does not connect within `timeout`.
    static func connect(to address: PathAddress, timeout: TimeAmount, on loop: any EventLoop) async throws -> WireConnection {
        let bootstrap = ClientBootstrap(group: loop)
            .connectTimeout(timeout)
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
        let initializer: @Sendable (any Channel) -> EventLoopFuture<WireConnection> = { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(WireFrameDecoder(expectsPreamble: false)))
                return try WireConnection(wrappingChannelSynchronously: channel)
            }
        }
        switch address {
        case .socket(let socket): return try await bootstrap.connect(to: socket, channelInitializer: initializer)
        case .host(let endpoint): return try await bootstrap.connect(host: endpoint.host, port: endpoint.port, channelInitializer: initializer)
        case .relay: throw PathConnectError(address: address, reason: "a relay address is not a direct one")
        }
    }

    /// The UDP socket, once bound (tests read its options).
    var datagramSocket: (any Channel)? { udp }

    public var canSendDatagrams: Bool { udp?.isWritable ?? false }

    public func datagramBuffer(capacity: Int) -> ByteBuffer {
        udp?.allocator.buffer(capacity: capacity) ?? ByteBuffer()
    }

    public func sendDatagram(_ datagram: ByteBuffer, to address: PathAddress, batched: Bool) {
        guard let udp, case .socket(let socket) = address else { return }
        let envelope = AddressedEnvelope(remoteAddress: socket, data: datagram)
        if batched {
            udp.write(envelope, promise: nil)
            datagramsWaiting = true
        } else {
            udp.writeAndFlush(envelope, promise: nil)
            datagramsWaiting = false
        }
    }

    public func flushDatagrams() {
        guard datagramsWaiting else { return }
        datagramsWaiting = false
        udp?.flush()
    }

    public func waitUntilClosed() async throws {
        try await udp?.closeFuture.get()
    }

    public func close() {
        server?.channel.close(promise: nil)
        udp?.close(promise: nil)
    }
}
