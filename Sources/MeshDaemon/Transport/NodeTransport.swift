import NIOCore

/// What a node does with one network: listen, accept stream paths, dial one, send and receive
/// datagrams. `SocketTransport` is the direct one (TCP and UDP on one port, over NIO); the
/// relay and the simulator are others. `MeshNode` talks to its transports through this
/// protocol alone: no socket, bootstrap or NIO channel reaches the node's components.
///
/// Everything runs on the node's loop (`bind` gets it): received datagrams are handed over
/// synchronously on it, accepted and dialled paths complete on it.
///
/// Datagrams are addressed, not connected: a peer's datagram endpoint is a `PathAddress` the
/// node keeps (and follows to the source of its latest authenticated datagram), and every send
/// names it. Datagrams are unreliable and unordered; `maximumDatagramBytes` is their size limit.
public protocol NodeTransport: AnyObject, Sendable {
    /// The largest datagram this transport sends (sealed, header included).
    var maximumDatagramBytes: Int { get }

    /// Starts listening on `listen` (port 0: any free port) with everything on `loop`: received
    /// datagrams go to `receiver`, synchronously on `loop`. Returns the address bound (the real
    /// port). Throws `NodeError` (`.listen`) when it cannot listen. Called once.
    func bind(_ listen: DaemonConfiguration.Endpoint, on loop: any EventLoop,
              receiver: any DatagramReceiver) async throws -> DaemonConfiguration.Endpoint

    /// Serves accepted stream paths until the listener closes (`close()`): each runs `serve`
    /// in its own task, with the path's frames (the preamble first); the path closes when
    /// `serve` returns. Returns once every `serve` has returned.
    func acceptStreams(_ serve: @escaping @Sendable (any ChannelPath, inout PathFrames) async -> Void) async throws

    /// Opens a stream path to `address` for `kind` (the transport sends the preamble before the
    /// first frame written) and runs `body` with it; the path closes when `body` returns or
    /// throws. Throws `PathConnectError` when no path opened within `timeout` (then `body` did
    /// not run); rethrows what `body` throws.
    func dialStream<Result: Sendable>(to address: PathAddress, kind: ConnectionKind, timeout: TimeAmount,
                                      _ body: (any ChannelPath, inout PathFrames) async throws -> Result) async throws -> Result

    /// Whether a datagram may be sent now: false while the transport holds as much as it may of
    /// unsent datagrams (the node then drops the datagram before sealing it, as the network
    /// would).
    var canSendDatagrams: Bool { get }

    /// A buffer for one datagram of up to `capacity` bytes, to seal into and pass to
    /// `sendDatagram`.
    func datagramBuffer(capacity: Int) -> ByteBuffer

    /// Sends one sealed datagram to `address`: at once (with any batched ones before it), or
    /// with `batched` kept until `flushDatagrams()`, so a batch leaves together (one
    /// sendmmsg(2) on UDP). A datagram to an address this transport cannot reach is dropped.
    func sendDatagram(_ datagram: ByteBuffer, to address: PathAddress, batched: Bool)

    /// Sends the batched datagrams that wait.
    func flushDatagrams()

    /// Returns once the transport closed (after `close()`, or a failure of its datagram side).
    func waitUntilClosed() async throws

    /// Stops listening and receiving (idempotent); paths already open stay open until closed.
    func close()
}

/// Where a transport hands received datagrams: the node, synchronously on its loop.
///
/// `datagram` is the datagram where the transport received it, valid for the call only: the
/// receiver opens it in place (no copy, no task per datagram).
public protocol DatagramReceiver: AnyObject, Sendable {
    /// One datagram from `source`.
    func receive(_ datagram: UnsafeRawBufferPointer, from source: PathAddress)
    /// The datagrams read together have all been handed over (a burst ended).
    func burstEnded()
}
