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

extension MeshNode {
    /// Binds TCP, then UDP on the port TCP got. With port 0 a few ports are tried until UDP's
    /// is free too.
    ///
    /// The UDP channel is a plain channel, not an `NIOAsyncChannel`: `DatagramReceiveHandler`
    /// takes every read, and the async wrapper's end-of-read handling alone cost ≈ 3 000
    /// instructions per datagram received.
    func bindListeners() async throws -> (ListenerSocket, any Channel) {
        let host = configuration.listen.host
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
                    .bind(host: host, port: configuration.listen.port) { channel in
                        channel.eventLoop.makeCompletedFuture {
                            try channel.pipeline.syncOperations.addHandler(
                                ByteToMessageHandler(WireFrameDecoder(expectsPreamble: true)))
                            return try WireConnection(wrappingChannelSynchronously: channel)
                        }
                    }
            } catch {
                throw NodeError(code: .listen, message: "cannot listen on \(configuration.listen): \(ListenFailure.describe(error, transport: "TCP"))")
            }
            let port = server.channel.localAddress?.port ?? configuration.listen.port
            do {
                let udp = try await DatagramBootstrap(group: loop)
                    // Up to 32 datagrams per recvmmsg, so a burst costs few system calls; one
                    // recvmmsg per readiness (epoll is level-triggered: what is left is read on
                    // the next loop turn), so a lone datagram does not cost a second, empty one.
                    .channelOption(ChannelOptions.datagramVectorReadMessageCount, value: 32)
                    .channelOption(ChannelOptions.maxMessagesPerRead, value: 1)
                    .channelOption(ChannelOptions.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 32 * 2048))
                    .channelOption(ChannelOptions.socketOption(.so_rcvbuf), value: Self.datagramReceiveBuffer)
                    .channelInitializer { channel in
                        channel.eventLoop.makeCompletedFuture {
                            // The reader first: a datagram then passes no other handler; errors
                            // pass it on to the absorber.
                            try channel.pipeline.syncOperations.addHandler(DatagramReceiveHandler(node: self))
                            try channel.pipeline.syncOperations.addHandler(ErrorAbsorbingHandler())
                        }
                    }
                    .bind(host: host, port: port).get()
                boundListenAddress = DaemonConfiguration.Endpoint(host: host, port: port)
                return (server, udp)
            } catch {
                try? await server.executeThenClose { _ in }
                lastError = error
                if configuration.listen.port != 0 { break }
            }
        }
        throw NodeError(code: .listen, message: "cannot listen on \(configuration.listen): \(lastError.map { ListenFailure.describe($0, transport: "UDP") } ?? "UDP: no free port")")
    }

    /// Accepts TCP connections until the listener closes; each is served in its own task.
    nonisolated func acceptConnections(_ server: ListenerSocket) async throws {
        try await server.executeThenClose { inbound in
            try await withThrowingDiscardingTaskGroup { group in
                for try await connection in inbound {
                    group.addTask { await self.serveInbound(connection) }
                }
            }
        }
    }

    /// Serves the UDP socket until it closes (its reads go to `DatagramReceiveHandler`);
    /// cancelling closes it.
    nonisolated func receiveDatagrams(_ socket: any Channel) async throws {
        try await withTaskCancellationHandler {
            try await socket.closeFuture.get()
        } onCancel: {
            socket.close(promise: nil)
        }
    }

    /// One accepted connection: admission, preamble, then a channel handshake or pairing.
    nonisolated func serveInbound(_ connection: WireConnection) async {
        guard let admission = await admitInbound(connection.channel) else {
            try? await connection.executeThenClose { _, _ in }
            return
        }
        do {
            try await connection.executeThenClose { inbound, _ in
                var frames = inbound.makeAsyncIterator()
                guard case .preamble(let kind)? = try await frames.next() else { return }
                switch kind {
                case .channel: try await self.respondToChannel(admission, frames: &frames)
                case .pairing: try await self.servePairing(admission, frames: &frames)
                }
            }
        } catch let error as WireFormatError {
            await count { $0.connectionsBadPreamble += 1 }
            logger.trace("closed a connection that sent bad framing", metadata: ["error": "\(error)"])
        } catch {
            logger.trace("inbound connection ended", metadata: ["error": "\(error)"])
        }
        await connectionEnded(admission.id)
    }

    /// Rate limit and slots (`UnauthenticatedSlots`) for a new connection; registers it and
    /// arms its first-message deadline. A stranger connection evicted to make room is closed.
    func admitInbound(_ channel: any Channel) -> InboundAdmission? {
        guard phase == .running else { return nil }
        let source = channel.remoteAddress?.ipAddress ?? "?"
        let now = clock.monotonicNanoseconds()
        switch connections.admit(channel, source: source, known: isPairedDeviceAddress(source), now: now) {
        case .refused(.rateLimited):
            counters.connectionsRateLimited += 1
            return nil
        case .refused(.sourceFull):
            counters.connectionsOverSourceCap += 1
            return nil
        case .refused(.full):
            counters.connectionsOverCap += 1
            return nil
        case .admitted(let id, let evicted):
            if let evicted {
                counters.connectionsEvicted += 1
                deadlines.removeValue(forKey: evicted.id)?.cancel()
                evicted.channel?.close(promise: nil)
            }
            armDeadline(channel, seconds: tuning.firstMessageTimeout, connection: id)
            return InboundAdmission(id: id, channel: channel, sourceIP: source)
        }
    }

    /// Whether `host` (an IP address as sockets report it) is an address a paired device was
    /// seen at, was paired or configured with, or advertises over mDNS now.
    func isPairedDeviceAddress(_ host: String) -> Bool {
        for (peer, runtime) in peers {
            if runtime.connection?.channel.remoteAddress?.ipAddress == host || runtime.datagramEndpoint?.ipAddress == host {
                return true
            }
            for address in runtime.record.addresses where EndpointParser.parse(address.address).map({ DiscoveredPeerTable.unscoped($0.host) }) == host {
                return true
            }
            for endpoint in discovered.mdnsEndpoints[peer] ?? [] where DiscoveredPeerTable.unscoped(endpoint.host) == host {
                return true
            }
        }
        return false
    }

    /// The first message of an accepted connection passed (a handshake from a paired key, a
    /// pairing attempt under the live code): it is no longer evictable, and `seconds` is its
    /// deadline from now.
    func engage(_ id: UInt64, channel: any Channel, deadline seconds: Double) {
        guard connections.engage(id) else { return }
        armDeadline(channel, seconds: seconds, connection: id)
    }

    /// Closes `channel` after `seconds` unless the connection authenticates or ends first
    /// (replaces an earlier deadline of the same connection).
    func armDeadline(_ channel: any Channel, seconds: Double, connection id: UInt64) {
        deadlines[id]?.cancel()
        // On the node's loop (every connection's channel is on it too), so the node is entered
        // at once, without a task.
        deadlines[id] = loop.scheduleTask(in: .nanoseconds(Nanoseconds.signed(seconds: seconds))) { [weak self] in
            guard let self else {
                channel.close(promise: nil)
                return
            }
            self.onLoop { $0.deadlinePassed(id, channel: channel) }
        }
    }

    /// A deadline fired: unless the connection authenticated or ended meanwhile, close it.
    private func deadlinePassed(_ id: UInt64, channel: any Channel) {
        guard deadlines.removeValue(forKey: id) != nil else { return }
        counters.connectionsTimedOut += 1
        channel.close(promise: nil)
    }

    /// Forgets a connection that closed.
    func connectionEnded(_ id: UInt64) {
        connections.ended(id)
        deadlines.removeValue(forKey: id)?.cancel()
    }

    /// The connection authenticated: it no longer counts against the cap or has a deadline.
    func markAuthenticated(_ id: UInt64) {
        deadlines.removeValue(forKey: id)?.cancel()
        connections.authenticated(id)
    }

    /// Mutates the counters (for nonisolated callers).
    func count(_ change: (inout NodeCounters) -> Void) { change(&counters) }

    /// Registers an outgoing connection.
    func registerConnection(_ channel: any Channel) -> UInt64 {
        connections.register(channel)
    }
}

extension MeshNode {
    /// Receive buffer asked for on the UDP socket: 4 MiB (the kernel doubles it for its own
    /// bookkeeping and caps it at `net.core.rmem_max`). The default (≈ 208 KiB) overflowed
    /// in bursts on loopback — about 2 % of realtime datagrams and acks in `mesh-bench`,
    /// each loss a durable fallback copy. Memory is used only while datagrams wait.
    static let datagramReceiveBuffer: SocketOptionValue = 4 << 20

    /// Logs the UDP receive buffer the kernel granted; a notice, with the fix, when
    /// `net.core.rmem_max` held it below what was asked (Debian's default allows ≈ 208 KiB).
    func noteDatagramReceiveBuffer(_ udp: any Channel) async {
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
