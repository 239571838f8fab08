import NIOCore

/// The direct transport and the relay side by side, as the node's one `NodeTransport`: each
/// path and datagram goes where its address says (`PathAddress.relay` through the broker,
/// anything else directly); both sides' accepted paths are served; the node's datagram
/// receiver gets both sides' datagrams.
final class CompositeTransport: NodeTransport, @unchecked Sendable {
    let direct: any NodeTransport
    let relay: RelayTransport

    init(direct: any NodeTransport, relay: RelayTransport) {
        self.direct = direct
        self.relay = relay
    }

    var maximumDatagramBytes: Int { min(direct.maximumDatagramBytes, relay.maximumDatagramBytes) }

    func bind(_ listen: DaemonConfiguration.Endpoint, on loop: any EventLoop,
              receiver: any DatagramReceiver) async throws -> DaemonConfiguration.Endpoint {
        let bound = try await direct.bind(listen, on: loop, receiver: receiver)
        do {
            _ = try await relay.bind(listen, on: loop, receiver: receiver)
        } catch {
            direct.close()
            throw error
        }
        return bound
    }

    func acceptStreams(_ serve: @escaping @Sendable (any ChannelPath, inout PathFrames) async -> Void) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await self.direct.acceptStreams(serve) }
            group.addTask { try await self.relay.acceptStreams(serve) }
            try await group.waitForAll()
        }
    }

    func dialStream<Result: Sendable>(to address: PathAddress, kind: ConnectionKind, timeout: TimeAmount,
                                      _ body: (any ChannelPath, inout PathFrames) async throws -> Result) async throws -> Result {
        if case .relay = address { return try await relay.dialStream(to: address, kind: kind, timeout: timeout, body) }
        return try await direct.dialStream(to: address, kind: kind, timeout: timeout, body)
    }

    /// The direct side's: a relay datagram the broker connection cannot take is dropped, as a
    /// datagram is on a full UDP buffer.
    var canSendDatagrams: Bool { direct.canSendDatagrams }

    func datagramBuffer(capacity: Int) -> ByteBuffer { direct.datagramBuffer(capacity: capacity) }

    func sendDatagram(_ datagram: ByteBuffer, to address: PathAddress, batched: Bool) {
        if case .relay = address {
            relay.sendDatagram(datagram, to: address, batched: batched)
        } else {
            direct.sendDatagram(datagram, to: address, batched: batched)
        }
    }

    func flushDatagrams() { direct.flushDatagrams() }

    func waitUntilClosed() async throws { try await direct.waitUntilClosed() }

    func close() {
        direct.close()
        relay.close()
    }
}
