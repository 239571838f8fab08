import MeshCore
import MeshDaemon
import NIOCore

/// One simulated daemon incarnation's network: the real `MeshNode`'s `NodeTransport` over the
/// `SimulatedNetwork`, on the daemon's `SimulatedEventLoop`.
///
/// Datagrams go to the network at once and arrive through `handle(_:)`, handed to the node
/// synchronously as a socket read would; stream paths are `SimulatedStreamPath`s, one per
/// connection end. Everything runs on the simulation's thread, hence `@unchecked Sendable`.
final class SimulatedTransport: NodeTransport, RelayRouting, @unchecked Sendable {
    let index: Int
    let network: SimulatedNetwork
    let loop: SimulatedEventLoop
    private var receiver: (any DatagramReceiver)?
    private var closed = false
    private let closedPromise: EventLoopPromise<Void>
    /// Accepted paths the node has not taken yet, and its accept loop waiting for one.
    private var accepted: [SimulatedStreamPath] = []
    private var acceptWaiter: UnsafeContinuation<SimulatedStreamPath?, Never>?
    /// This incarnation's open stream paths, by connection.
    private var paths: [UInt64: SimulatedStreamPath] = [:]
    /// Dials waiting for the network's answer, by attempt.
    private var dials: [UInt64: UnsafeContinuation<UInt64?, Never>] = [:]
    private var dialFailures: [UInt64: String] = [:]
    /// Batched datagrams sent since the node last flushed. The network carries each at once,
    /// but a socket holds them until the flush: the simulation checks that none waits once the
    /// loops are idle.
    private(set) var batchedDatagramsWaiting = 0

    init(index: Int, network: SimulatedNetwork, loop: SimulatedEventLoop) {
        self.index = index
        self.network = network
        self.loop = loop
        closedPromise = loop.makePromise()
    }

    var maximumDatagramBytes: Int { 1200 }

    func bind(_ listen: DaemonConfiguration.Endpoint, on loop: any EventLoop,
              receiver: any DatagramReceiver) async throws -> DaemonConfiguration.Endpoint {
        self.receiver = receiver
        let address = network.addresses[index]
        return DaemonConfiguration.Endpoint(host: address.ipAddress ?? "?", port: address.port ?? SimulatedNetwork.port)
    }

    func acceptStreams(_ serve: @escaping @Sendable (any ChannelPath, inout PathFrames) async -> Void) async throws {
        await withDiscardingTaskGroup { group in
            while let path = await nextAccepted() {
                group.addTask {
                    var frames = PathFrames(SimulatedFrameSource(path: path))
                    await serve(path, &frames)
                    path.close()
                }
            }
        }
    }

    private func nextAccepted() async -> SimulatedStreamPath? {
        if !accepted.isEmpty { return accepted.removeFirst() }
        guard !closed else { return nil }
        return await withUnsafeContinuation { acceptWaiter = $0 }
    }

    func dialStream<Result: Sendable>(to address: PathAddress, kind: ConnectionKind, timeout: TimeAmount,
                                      _ body: (any ChannelPath, inout PathFrames) async throws -> Result) async throws -> Result {
        guard let target = resolve(address) else {
            throw PathConnectError(address: address, reason: "no such host in the simulated network")
        }
        let attempt = network.dial(from: index, to: target, kind: kind, timeout: UInt64(max(timeout.nanoseconds, 0)))
        let connection = await withUnsafeContinuation { dials[attempt] = $0 }
        guard let connection, let path = paths[connection] else {
            throw PathConnectError(address: address, reason: dialFailures.removeValue(forKey: attempt) ?? "closed")
        }
        defer { path.close() }
        var frames = PathFrames(SimulatedFrameSource(path: path))
        return try await body(path, &frames)
    }

    /// The socket address `address` names now: a name `dN` resolves to that node's current
    /// address (as discovery would tell); an IP address is taken as it is.
    func resolve(_ address: PathAddress) -> SocketAddress? {
        switch address {
        case .socket(let socket):
            return socket
        case .host(let endpoint):
            if let node = network.node(named: endpoint.host) { return network.addresses[node] }
            return try? SocketAddress(ipAddress: endpoint.host, port: endpoint.port)
        case .relay(let relay):
            guard case .peer(let peer) = relay.route, let node = network.deviceIDs.firstIndex(of: peer) else { return nil }
            return SimulatedNetwork.relayAddress(node: node)
        }
    }

    /// The relay route to `peer` when the simulation configured one (`SimulatedNetwork+Relay.swift`).
    func relayRoute(to peer: DeviceID) -> PathAddress? {
        guard network.relayConfigured, network.deviceIDs.contains(peer) else { return nil }
        return .relay(RelayAddress(broker: SimulatedNetwork.relayBroker, route: .peer(peer)))
    }

    /// A stream path's end for `connection` as this node sees it (relay paths name the peer).
    private func makePath(_ connection: UInt64, remote: SocketAddress) -> SimulatedStreamPath {
        let address = network.pathAddress(remote)
        let local = address.isRelay ? nil : network.localAddress(of: connection, at: index).map(PathAddress.socket)
        return SimulatedStreamPath(transport: self, connection: connection, remote: address, local: local)
    }

    var canSendDatagrams: Bool { !closed }

    func datagramBuffer(capacity: Int) -> ByteBuffer { ByteBufferAllocator().buffer(capacity: capacity) }

    func sendDatagram(_ datagram: ByteBuffer, to address: PathAddress, batched: Bool) {
        guard !closed, let target = resolve(address) else { return }
        network.sendDatagram(from: index, to: target, bytes: Array(datagram.readableBytesView))
        // An unbatched datagram leaves with the batched ones written before it (one flush).
        batchedDatagramsWaiting = batched ? batchedDatagramsWaiting + 1 : 0
    }

    /// The simulated network carries each datagram as it is sent; this only settles the count
    /// of those that would still wait in a socket.
    func flushDatagrams() { batchedDatagramsWaiting = 0 }

    func waitUntilClosed() async throws { try await closedPromise.futureResult.get() }

    func close() {
        guard !closed else { return }
        closed = true
        let waiter = acceptWaiter
        acceptWaiter = nil
        waiter?.resume(returning: nil)
        closedPromise.succeed(())
    }

    // MARK: - From the network

    /// An event of the network for this node.
    func handle(_ event: NetworkEvent) {
        switch event {
        case .datagram(_, let source, let bytes):
            guard let receiver, !closed else { return }
            bytes.withUnsafeBytes { receiver.receive($0, from: network.pathAddress(source)) }
            receiver.burstEnded()
        case .accepted(_, let connection, let remote):
            let path = makePath(connection, remote: remote)
            guard !closed else { return path.close() }
            paths[connection] = path
            if let waiter = acceptWaiter {
                acceptWaiter = nil
                waiter.resume(returning: path)
            } else {
                accepted.append(path)
            }
        case .dialed(_, let attempt, let connection, let failure):
            guard let waiter = dials.removeValue(forKey: attempt) else {
                if let connection { network.closeEnd(connection, node: index) }
                return
            }
            if let connection, let remote = network.remoteAddress(of: connection, at: index) {
                paths[connection] = makePath(connection, remote: remote)
            } else {
                dialFailures[attempt] = failure ?? "closed"
            }
            waiter.resume(returning: connection)
        case .stream(_, let connection, let arrival):
            paths[connection]?.arrived(arrival)
        }
    }

    /// A path of this transport closed: the network closes its end.
    func pathClosed(_ connection: UInt64) {
        paths[connection] = nil
        network.closeEnd(connection, node: index)
    }
}
