import MeshLocalAPI
import NIOCore

/// A request on its way to the daemon, with where its reply or error frame goes.
struct LocalAPIClientRequest: Sendable {
    /// Where the answer to a request goes.
    enum Sink: Sendable {
        /// One caller waits for this request alone.
        case single(LocalAPIReplySlot<LocalAPIFrame>)
        /// Request `index` of a batch.
        case batch(LocalAPIBatchReplies, index: Int)
    }

    var operation: LocalAPIOperation
    var flags: LocalAPIFrame.Flags
    var body: ByteBuffer
    var sink: Sink
    /// For `attach`: where the events carrying this request's id go.
    var events: LocalAPIEventStream? = nil

    /// Fails the request without sending it.
    func fail(_ error: MeshClientError) {
        sink.complete(.failure(error))
        events?.continuation.finish()
    }
}

/// The event stream of one `attach`, registered with the handler under the request's id while
/// it lives; its identity is what `LocalAPIClientHandler.forget(_:)` removes.
final class LocalAPIEventStream: Sendable {
    let continuation: AsyncStream<MeshClientEvent>.Continuation

    init(_ continuation: AsyncStream<MeshClientEvent>.Continuation) { self.continuation = continuation }
}

extension LocalAPIClientRequest.Sink {
    /// Hands the answer over. Call on the loop.
    func complete(_ answer: Result<LocalAPIFrame, MeshClientError>) {
        switch self {
        case .single(let slot): slot.complete(answer.mapError { $0 })
        case .batch(let replies, let index): replies.complete(index, answer)
        }
    }
}

/// Matches reply and error frames to requests by request id, and frames the requests.
///
/// Takes the requests one drain of `MeshClient`'s outbound queue collected and writes all their
/// frames as one buffer (the layout of `LocalAPIFrameEncoder`). Assigns ids (1, 2, … wrapping
/// past 0), keeps where each answer goes, and fails them all when the connection ends or the
/// daemon sends a connection-level error (request id 0).
///
/// Event frames go to the stream of the attach request whose id they carry (registered before
/// the request is written, so events that follow the reply at once are never missed);
/// `events.dropped` (request id 0) goes to every stream. The events of one read burst are
/// decoded as they come and yielded together when the burst ends (or before the next reply, so
/// a caller never resumes before the events that preceded its reply). The streams finish when
/// the connection ends, or when an attach fails; a stream that ended otherwise (its attach was
/// cancelled, its reader stopped) is unregistered by `forget(_:)`.
final class LocalAPIClientHandler: ChannelDuplexHandler {
    typealias InboundIn = LocalAPIFrame
    typealias OutboundIn = [LocalAPIClientRequest]
    typealias OutboundOut = ByteBuffer

    private var pending: [UInt32: LocalAPIClientRequest.Sink] = [:]
    /// The id the next request gets, unless it is still in use (internal for tests of the wrap).
    var nextID: UInt32 = 1
    private let socketPath: String
    private var closedError: MeshClientError?
    private var eventSinks: [UInt32: LocalAPIEventStream] = [:]
    /// Events decoded during the current read burst, yielded in `channelReadComplete`.
    private var burst: [(requestID: UInt32, event: MeshClientEvent)] = []

    init(socketPath: String) { self.socketPath = socketPath }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let requests = unwrapOutboundIn(data)
        if let closedError {
            for request in requests { request.fail(closedError) }
            promise?.fail(closedError)
            return
        }
        var out = context.channel.allocator.buffer(capacity: requests.reduce(0) { $0 + LocalAPIWireFormat.headerLength + $1.body.readableBytes })
        for request in requests {
            // After the counter wrapped, skip ids still in use: an attach keeps its id for its
            // events as long as the connection lives, and a second request with that id would
            // end (or take over) its stream. At most as many skips as ids in use.
            var id = nextID
            var skipped = 0
            while skipped <= pending.count + eventSinks.count, pending[id] != nil || eventSinks[id] != nil {
                id = id == UInt32.max ? 1 : id + 1
                skipped += 1
            }
            nextID = id == UInt32.max ? 1 : id + 1
            pending[id] = request.sink
            if let events = request.events { eventSinks[id] = events }
            LocalAPIFrameEncoder.write(LocalAPIFrame(kind: .request, operation: request.operation, flags: request.flags,
                                                     requestID: id, body: request.body), to: &out)
        }
        context.write(wrapOutboundOut(out), promise: promise)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.kind {
        case .reply, .error:
            // Events that came before this answer reach their streams before the caller resumes.
            yieldBurst()
            if frame.requestID == 0, frame.kind == .error {
                let body = (try? LocalAPIJSON.decode(LocalAPIErrorBody.self, from: frame.body, operation: frame.operation))
                    ?? LocalAPIErrorBody(code: "unknown", message: "meshd reported a connection error")
                failAll(MeshClientError.daemon(body))
            } else if let sink = pending.removeValue(forKey: frame.requestID) {
                if frame.kind == .error, let events = eventSinks.removeValue(forKey: frame.requestID) { events.continuation.finish() }
                sink.complete(.success(frame))
            }
        case .event:
            burst.append((frame.requestID, Self.event(frame)))
        case .request:
            // The daemon never sends requests; ignore one rather than fail the connection.
            break
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        yieldBurst()
        context.fireChannelReadComplete()
    }

    func channelInactive(context: ChannelHandlerContext) {
        failAll(MeshClientError.connectionClosed(socketPath: socketPath))
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        failAll(MeshClientError.protocolViolation("\(error)"))
        context.close(promise: nil)
    }

    private static func event(_ frame: LocalAPIFrame) -> MeshClientEvent {
        do {
            return MeshClientEvent(try LocalAPIDataEvent.decode(frame))
        } catch {
            return .undecodable(operation: frame.operation.name, reason: error.message)
        }
    }

    /// Hands the events of the read burst to their streams, in arrival order.
    private func yieldBurst() {
        guard !burst.isEmpty else { return }
        let events = burst
        burst.removeAll(keepingCapacity: burst.count <= 1024)
        for (requestID, event) in events {
            if requestID == 0 {
                for sink in eventSinks.values { sink.continuation.yield(event) }
            } else if let sink = eventSinks[requestID] {
                sink.continuation.yield(event)
            }
        }
    }

    private func failAll(_ error: MeshClientError) {
        yieldBurst()
        if closedError == nil { closedError = error }
        let sinks = pending.values
        pending.removeAll()
        for sink in sinks { sink.complete(.failure(error)) }
        let streams = eventSinks.values
        eventSinks.removeAll()
        for stream in streams { stream.continuation.finish() }
    }

    /// Unregisters an attach's stream that ended (its id may then be reused). Call on the loop;
    /// nothing happens when it is not (or no longer) registered.
    func forget(_ stream: LocalAPIEventStream) {
        guard let id = eventSinks.first(where: { $0.value === stream })?.key else { return }
        eventSinks.removeValue(forKey: id)
    }

    /// Attach streams registered now (for tests).
    var registeredEventStreams: Int { eventSinks.count }
}
