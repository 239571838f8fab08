import Foundation
import MeshCore
import MeshLocalAPI
import NIOCore
import NIOPosix

/// A connection to the local `meshd` over its Unix socket, with one typed method per control
/// operation (docs/LOCAL-API.md).
///
/// Calls may run concurrently on one client (e.g. `awaitPairing` while another task calls
/// `cancelPairing`). A daemon error surfaces as `MeshClientError` with `kind == .daemon` and
/// the daemon's `code` and `message`. Cancelling the calling task abandons the wait for the reply
/// (the daemon finishes the operation regardless). Call `close()` when done.
public final class MeshClient: Sendable {
    /// The socket this client is connected to.
    public let socketPath: String
    /// Internal: the attach streams' callbacks hold it (they may outlive the client).
    let channel: any Channel
    /// Requests written by callers and not yet handed to the channel: drained by one loop task
    /// that frames them all into one buffer with a single flush, so concurrent calls (and the
    /// items of a batch) share one wake-up of the loop and one write (a lone call on the loop
    /// itself drains at once, see `enqueue`).
    private let outbound = Locked<[LocalAPIClientRequest]>([])
    /// The connection's handler, for the loop's own calls (see `enqueue`).
    private let handler: NIOLoopBound<LocalAPIClientHandler>

    /// Runs Swift tasks on the thread that does this connection's socket I/O.
    ///
    /// Optional: for an app that wants the lowest latency, run the code that sends and the loop
    /// that reads `events` with this preference (`Task(executorPreference: client.taskExecutor)`
    /// or `withTaskExecutorPreference`). A send then reaches the socket without waking another
    /// thread, and a reply or event resumes the waiting code without a second one (about two
    /// thread wake-ups per message fewer). Do not block on it: blocking work there stalls the
    /// connection's I/O, and, with the shared default event loop group, other clients' too.
    public let taskExecutor: any TaskExecutor

    /// How many events each attachment's stream holds before the client stops reading the
    /// socket (see `MeshEventBufferLimits`).
    public let eventBufferLimits: MeshEventBufferLimits

    private init(socketPath: String, channel: any Channel, handler: NIOLoopBound<LocalAPIClientHandler>,
                 eventBufferLimits: MeshEventBufferLimits) {
        self.socketPath = socketPath
        self.channel = channel
        self.handler = handler
        self.eventBufferLimits = eventBufferLimits
        self.taskExecutor = EventLoopTaskExecutor(channel.eventLoop)
    }

    /// Connects to the daemon at `socketPath`, with the default event buffer limits.
    ///
    /// Throws `MeshClientError` of kind `.unreachable` ("is meshd running? socket …") when the
    /// socket is missing, refuses connections, or may not be opened by this user.
    public static func connect(socketPath: String,
                               eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) async throws -> MeshClient {
        try await connect(socketPath: socketPath, eventLoopGroup: eventLoopGroup, eventBufferLimits: .default)
    }

    /// Connects to the daemon at `socketPath`; each attachment's `events` holds at most
    /// `eventBufferLimits.capacity` events before the client stops reading the socket
    /// (back-pressure; the daemon then sheds realtime events and reports how many).
    ///
    /// Throws `MeshClientError` of kind `.unreachable` ("is meshd running? socket …") when the
    /// socket is missing, refuses connections, or may not be opened by this user.
    public static func connect(socketPath: String,
                               eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
                               eventBufferLimits: MeshEventBufferLimits) async throws -> MeshClient {
        // sockaddr_un holds 107 path bytes: a longer path can never be connected to.
        guard socketPath.utf8.count <= 107 else {
            throw MeshClientError.unreachable(socketPath: socketPath,
                                              detail: "the path is \(socketPath.utf8.count) bytes, longer than the 107 a Unix socket path may have")
        }
        if let problem = SocketPathCheck.problem(socketPath) {
            throw MeshClientError.unreachable(socketPath: socketPath, detail: problem)
        }
        // Kept from the initializer: a daemon that refuses the connection (too many) may close it
        // before `connect` returns, and a closed pipeline no longer lists its handlers.
        let created = Locked<NIOLoopBound<LocalAPIClientHandler>?>(nil)
        let bootstrap = ClientBootstrap(group: eventLoopGroup)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(ByteToMessageHandler(LocalAPIFrameDecoder(maximumBodyLength: 16 << 20)))
                    let handler = LocalAPIClientHandler(socketPath: socketPath,
                                                        replyReserveBytes: eventBufferLimits.replyReserveBytes)
                    try sync.addHandler(handler)
                    created.withLock { $0 = NIOLoopBound(handler, eventLoop: channel.eventLoop) }
                }
            }
        do {
            let channel = try await bootstrap.connect(unixDomainSocketPath: socketPath).get()
            guard let handler = created.withLock({ $0 }) else {
                throw MeshClientError.connectionClosed(socketPath: socketPath)
            }
            return MeshClient(socketPath: socketPath, channel: channel, handler: handler, eventBufferLimits: eventBufferLimits)
        } catch let error as IOError {
            let detail: String
            switch error.errnoCode {
            case ECONNREFUSED: detail = "nothing is listening"
            case EACCES, EPERM: detail = "permission denied (the socket's mode or owner keeps this user out)"
            case ENOENT: detail = "no socket file"
            default: detail = error.description
            }
            throw MeshClientError.unreachable(socketPath: socketPath, detail: detail)
        } catch {
            throw MeshClientError.unreachable(socketPath: socketPath, detail: "\(error)")
        }
    }

    /// Closes the connection; pending calls fail with `.connectionClosed`.
    public func close() async {
        try? await channel.close()
    }

    // MARK: - Raw requests

    /// Sends one request frame and returns the daemon's reply frame.
    ///
    /// For operations without a typed method (raw frames of any operation; the data operations have typed calls in MeshClient+Data). Throws
    /// `MeshClientError` with kind `.daemon` when the daemon answers with an error frame.
    public func send(_ operation: LocalAPIOperation, body: ByteBuffer,
                     flags: LocalAPIFrame.Flags = []) async throws -> LocalAPIFrame {
        try await request(operation, body: body, flags: flags, events: nil)
    }

    /// Sends one request; with `events`, event frames carrying its request id go there.
    func request(_ operation: LocalAPIOperation, body: ByteBuffer, flags: LocalAPIFrame.Flags,
                 events: LocalAPIEventStream?) async throws -> LocalAPIFrame {
        let slot = LocalAPIReplySlot<LocalAPIFrame>()
        enqueue { $0.append(LocalAPIClientRequest(operation: operation, flags: flags, body: body, sink: .single(slot), events: events)) }
        let reply = try await withTaskCancellationHandler {
            try await slot.wait()
        } onCancel: {
            slot.fail(CancellationError())
        }
        if reply.kind == .error {
            throw MeshClientError.daemon(try decode(LocalAPIErrorBody.self, reply))
        }
        return reply
    }

    /// Sends one request without a task or a suspension: `completion` gets the reply or error
    /// frame, or why there is none, once, on the connection's loop.
    func request(_ operation: LocalAPIOperation, body: ByteBuffer, flags: LocalAPIFrame.Flags,
                 completion: @escaping @Sendable (Result<LocalAPIFrame, MeshClientError>) -> Void) {
        enqueue { $0.append(LocalAPIClientRequest(operation: operation, flags: flags, body: body, sink: .callback(completion))) }
    }

    /// Sends several requests with one hop to the loop and one write; returns each one's reply
    /// or error frame (or why there is none), in request order.
    func requests(_ operation: LocalAPIOperation, bodies: [ByteBuffer], flags: LocalAPIFrame.Flags) async throws
        -> [Result<LocalAPIFrame, MeshClientError>] {
        guard !bodies.isEmpty else { return [] }
        let replies = LocalAPIBatchReplies(count: bodies.count)
        enqueue { queue in
            for (index, body) in bodies.enumerated() {
                queue.append(LocalAPIClientRequest(operation: operation, flags: flags, body: body, sink: .batch(replies, index: index)))
            }
        }
        let slot = replies.slot
        return try await withTaskCancellationHandler {
            try await slot.wait()
        } onCancel: {
            slot.fail(CancellationError())
        }
    }

    /// Unregisters an attach's event stream that ended, on the loop. Runs after the drain that
    /// registered it: that drain was scheduled before (or by) the attach's own enqueue. Static:
    /// the stream may outlive its `MeshClient` (the app kept only the attachment); the channel
    /// lives as long as the connection.
    static func forgetEvents(_ stream: LocalAPIEventStream, on channel: any Channel) {
        onHandler(of: channel) { $0.forget(stream) }
    }

    /// Ends a handler attach that failed or was cancelled: unregistered, then its `onEnd`, on
    /// the loop after any event it was still given. Once the connection is closed its end has
    /// already run (the connection's end finished every attach).
    static func endEvents(_ handler: LocalAPIEventStream, on channel: any Channel) {
        onHandler(of: channel) { $0.end(handler) }
    }

    /// An attach's stream has room again (or its reader went away): the handler hands over
    /// what waited and reads the socket again if it held reading back.
    static func resumeEvents(on channel: any Channel) {
        onHandler(of: channel) { $0.resumeDelivery() }
    }

    /// Runs `body` with the connection's handler on its loop; once the connection is closed
    /// there is nothing to do (its end unregistered every stream).
    private static func onHandler(of channel: any Channel, _ body: @escaping @Sendable (LocalAPIClientHandler) -> Void) {
        guard channel.isActive else { return }
        channel.eventLoop.execute {
            guard let handler = try? channel.pipeline.syncOperations.handler(type: LocalAPIClientHandler.self) else { return }
            body(handler)
        }
    }

    /// Events each attach stream holds, and frames the handler holds back, now (for tests).
    func bufferedEvents() async throws -> (perStream: [Int], queuedFrames: Int, queuedBytes: Int) {
        let channel = self.channel
        return try await channel.eventLoop.submit {
            let handler = try channel.pipeline.syncOperations.handler(type: LocalAPIClientHandler.self)
            return (handler.bufferedEventCounts, handler.queuedFrames, handler.queuedBytes)
        }.get()
    }

    /// How many attach streams the connection's handler holds now (for tests).
    func registeredEventStreams() async throws -> Int {
        let channel = self.channel
        return try await channel.eventLoop.submit {
            try channel.pipeline.syncOperations.handler(type: LocalAPIClientHandler.self).registeredEventStreams
        }.get()
    }

    /// Adds requests to the outbound queue (`add` runs under its lock); the first one into an
    /// empty queue schedules the drain.
    ///
    /// Called on the connection's loop (`taskExecutor`) while no earlier request awaits its
    /// reply, the drain runs at once: an app sending one message at a time gets it on the socket
    /// without a loop task in between, while concurrent senders (requests in flight) still share
    /// one drain, one buffer and one write per loop turn.
    private func enqueue(_ add: (inout [LocalAPIClientRequest]) -> Void) {
        let first = outbound.withLock { queue in
            let wasEmpty = queue.isEmpty
            add(&queue)
            return wasEmpty
        }
        guard first else { return }
        if channel.eventLoop.inEventLoop, handler.value.awaitsNoReply {
            drainOutbound()
            return
        }
        channel.eventLoop.execute { self.drainOutbound() }
    }

    private func drainOutbound() {
        let requests = outbound.withLock { queue in
            defer { queue.removeAll(keepingCapacity: queue.count <= 256) }
            return queue
        }
        guard channel.isActive else {
            // The pipeline may be gone: nothing would answer these. When the daemon said why it
            // ended the connection (e.g. too many connections), that is the error.
            let error = handler.value.endedWith ?? MeshClientError.connectionClosed(socketPath: socketPath)
            for request in requests { request.fail(error, via: handler.value.failures) }
            return
        }
        channel.writeAndFlush(requests, promise: nil)
    }

    /// Sends a JSON request and decodes the JSON reply.
    public func call<Reply: Decodable>(_ operation: LocalAPIOperation, _ body: some Encodable,
                                       as reply: Reply.Type) async throws -> Reply {
        try decode(Reply.self, try await send(operation, body: try LocalAPIJSON.encode(body)))
    }

    func decode<Value: Decodable>(_ type: Value.Type, _ frame: LocalAPIFrame) throws(MeshClientError) -> Value {
        try Self.decodeFrame(Value.self, frame)
    }
}
