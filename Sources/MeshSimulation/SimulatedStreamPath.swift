import MeshDaemon
import NIOCore

/// One end of a simulated stream connection as the node sees it: a reliable, ordered
/// `ChannelPath` whose frames cross the `SimulatedNetwork`, and the queue of what arrived for
/// the one task that reads it (`SimulatedFrameSource`).
final class SimulatedStreamPath: ChannelPath, @unchecked Sendable {
    let transport: SimulatedTransport
    let connection: UInt64
    let remote: PathAddress
    /// This end's address (the node's own, as the connection began).
    let local: PathAddress?
    private let closedPromise: EventLoopPromise<Void>
    private var closed = false
    /// Frames arrived and not read yet; the end of the stream once the other end closed.
    private var arrivals: [WireFrame] = []
    private var ended = false
    private var reader: UnsafeContinuation<WireFrame?, Never>?

    init(transport: SimulatedTransport, connection: UInt64, remote: PathAddress, local: PathAddress?) {
        self.transport = transport
        self.connection = connection
        self.remote = remote
        self.local = local
        closedPromise = transport.loop.makePromise()
    }

    var eventLoop: any EventLoop { transport.loop }
    var maximumFrameBytes: Int { Int(UInt16.max) }
    var isReliable: Bool { true }
    var isOrdered: Bool { true }
    var closeFuture: EventLoopFuture<Void> { closedPromise.futureResult }

    func send(_ frames: ByteBuffer, promise: EventLoopPromise<Void>?) {
        guard !closed, let bodies = try? WireFrame.bodies(in: frames) else {
            promise?.fail(ChannelError.ioOnClosedChannel)
            return
        }
        for body in bodies { transport.network.sendStream(body, on: connection, from: transport.index) }
        // The kernel took the bytes.
        promise?.succeed(())
    }

    func close() {
        guard !closed else { return }
        closed = true
        transport.pathClosed(connection)
        finish()
        closedPromise.succeed(())
    }

    /// Something arrived from the other end.
    func arrived(_ arrival: StreamArrival) {
        guard !closed, !ended else { return }
        switch arrival {
        case .preamble(let kind): push(.preamble(kind))
        case .frame(let body): push(.frame(body))
        case .end:
            finish()
            close()
        }
    }

    private func push(_ frame: WireFrame) {
        if let reader {
            self.reader = nil
            reader.resume(returning: frame)
        } else {
            arrivals.append(frame)
        }
    }

    /// No more frames: the reader gets the end once it read what arrived.
    private func finish() {
        ended = true
        if let reader, arrivals.isEmpty {
            self.reader = nil
            reader.resume(returning: nil)
        }
    }

    /// The next frame, nil at the end.
    func nextFrame() async -> WireFrame? {
        if !arrivals.isEmpty { return arrivals.removeFirst() }
        guard !ended else { return nil }
        return await withUnsafeContinuation { reader = $0 }
    }
}

/// What the node's task reads a simulated path's frames from.
struct SimulatedFrameSource: PathFrameSource {
    let path: SimulatedStreamPath

    mutating func next() async throws -> WireFrame? { await path.nextFrame() }
}
