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
        /// A closure that takes the answer on the connection's loop (`send(…completion:)`).
        case callback(@Sendable (Result<LocalAPIFrame, MeshClientError>) -> Void)
    }

    var operation: LocalAPIOperation
    var flags: LocalAPIFrame.Flags
    var body: ByteBuffer
    var sink: Sink
    /// For `attach`: where the events carrying this request's id go.
    var events: LocalAPIEventStream? = nil

    /// Fails the request without sending it, through `failures` (on the connection's loop).
    func fail(_ error: MeshClientError, via failures: LocalAPIFailureTrampoline) {
        failures.run {
            sink.complete(.failure(error))
            events?.finish()
        }
    }
}

/// Runs the failures of requests that were never sent one after the other, on the connection's
/// loop. A request fails so from inside the call that made it (the connection is closed and the
/// call would have written it at once); a completion that sends again — a pipelined sender —
/// then fails again inside itself. Here that failure waits in a queue for the outermost run to
/// take it, so a sender with 100 000 envelopes left does not nest 100 000 calls deep.
final class LocalAPIFailureTrampoline: @unchecked Sendable {
    // Used on the connection's loop only.
    private var jobs: [() -> Void] = []
    private var running = false

    func run(_ job: @escaping () -> Void) {
        jobs.append(job)
        guard !running else { return }
        running = true
        var index = 0
        while index < jobs.count {
            let next = jobs[index]
            index += 1
            next()
        }
        jobs.removeAll()
        running = false
    }
}

extension LocalAPIClientRequest.Sink {
    /// Hands the answer over. Call on the loop.
    func complete(_ answer: Result<LocalAPIFrame, MeshClientError>) {
        switch self {
        case .single(let slot): slot.complete(answer.mapError { $0 })
        case .batch(let replies, let index): replies.complete(index, answer)
        case .callback(let completion): completion(answer)
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
/// `events.dropped` (request id 0) goes to every stream. Frames of one read burst are queued as
/// they come and handed over when the burst ends (or when a reply comes, so a caller never
/// resumes before the events that preceded its reply). The streams finish when the connection
/// ends, or when an attach fails; a stream that ended otherwise (its attach was cancelled, its
/// reader stopped) is unregistered by `forget(_:)`.
///
/// Back-pressure: each stream holds a bounded number of events (`LocalAPIEventStream`). An
/// event whose stream is full stays queued here, with everything after it, and the handler
/// holds back the channel's `read()`, so the socket is not read and the daemon's slow-reader
/// policy applies; the stream's `onRoom` (once the app drained it to its low watermark) runs
/// `resumeDelivery()`. While a request waits for its reply the handler keeps reading up to
/// `replyReserveBytes` of queued frames and answers the replies among them at once (ahead of
/// the queued events), so an app awaiting a request inside its event loop is not stuck behind
/// events it has no room for.
final class LocalAPIClientHandler: ChannelDuplexHandler {
    typealias InboundIn = LocalAPIFrame
    typealias OutboundIn = [LocalAPIClientRequest]
    typealias OutboundOut = ByteBuffer

    /// A frame read and not yet handed over.
    private enum Queued {
        case event(requestID: UInt32, event: MeshClientEvent, bytes: Int)
        case answer(LocalAPIFrame)
    }

    private var pending: [UInt32: LocalAPIClientRequest.Sink] = [:]
    /// The id the next request gets, unless it is still in use (internal for tests of the wrap).
    var nextID: UInt32 = 1
    private let socketPath: String
    private let replyReserveBytes: Int
    private var closedError: MeshClientError?
    /// Why the connection ended (the daemon's connection-level error, or closed), once it did.
    var endedWith: MeshClientError? { closedError }
    private var eventSinks: [UInt32: LocalAPIEventStream] = [:]
    /// Frames read and not yet handed over, in arrival order from `queueHead`; nil where an
    /// answer was handed over ahead of blocked events.
    private var queue: [Queued?] = []
    private var queueHead = 0
    /// Bytes of the event frames in `queue`.
    private(set) var queuedBytes = 0
    /// The channel asked to read while the handler held reading back.
    private var readHeld = false
    private var context: ChannelHandlerContext?
    /// Where requests that were never sent fail (also `MeshClient`'s, once the channel is closed).
    let failures = LocalAPIFailureTrampoline()

    init(socketPath: String, replyReserveBytes: Int = MeshEventBufferLimits.default.replyReserveBytes) {
        self.socketPath = socketPath
        self.replyReserveBytes = replyReserveBytes
    }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    func handlerRemoved(context: ChannelHandlerContext) { self.context = nil }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let requests = unwrapOutboundIn(data)
        if let closedError {
            for request in requests { request.fail(closedError, via: failures) }
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
        context.write(NIOAny(out), promise: promise)
        // A reply is now awaited: reading may go on into the reserve.
        releaseHeldRead()
    }

    func flush(context: ChannelHandlerContext) {
        context.flush()
    }

    func read(context: ChannelHandlerContext) {
        if mayRead {
            context.read()
        } else {
            readHeld = true
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.kind {
        case .reply, .error:
            queue.append(.answer(frame))
            // Events that came before this answer reach their streams before the caller resumes.
            deliver()
        case .event:
            let bytes = LocalAPIWireFormat.headerLength + frame.body.readableBytes
            queue.append(.event(requestID: frame.requestID, event: Self.event(frame), bytes: bytes))
            queuedBytes += bytes
        case .request:
            // The daemon never sends requests; ignore one rather than fail the connection.
            break
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        deliver()
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

    /// Whether the socket may be read now: nothing is queued, or a reply is awaited and the
    /// queued frames are within the reserve.
    private var mayRead: Bool {
        queueHead == queue.count || (!pending.isEmpty && queuedBytes < replyReserveBytes)
    }

    /// A stream that was full has room again (or its reader went away): hand over what waited
    /// and read again if that was held back. Call on the loop.
    func resumeDelivery() {
        deliver()
        releaseHeldRead()
    }

    private func releaseHeldRead() {
        guard readHeld, mayRead, let context else { return }
        readHeld = false
        context.read()
    }

    /// Hands queued frames over in order until an event finds its stream full; then answers
    /// the replies queued behind it, so their callers do not wait for the app's events.
    private func deliver(force: Bool = false) {
        while queueHead < queue.count {
            guard let item = queue[queueHead] else {
                queueHead += 1
                continue
            }
            switch item {
            case .answer(let frame):
                queueHead += 1
                // A connection-level error ends everything (and hands over the rest itself).
                guard answer(frame) else { return }
                continue
            case .event(let requestID, let event, let bytes):
                guard offer(event, to: requestID, force: force) else {
                    if queueHead >= 1_024, queueHead * 2 >= queue.count {
                        queue.removeFirst(queueHead)
                        queueHead = 0
                    }
                    answerQueuedReplies()
                    return
                }
                queuedBytes -= bytes
            }
            queueHead += 1
        }
        queue.removeAll(keepingCapacity: queue.count <= 1_024)
        queueHead = 0
    }

    /// Offers an event to its stream (request id 0: to every stream); false when a stream is
    /// full (nothing was handed over then).
    private func offer(_ event: MeshClientEvent, to requestID: UInt32, force: Bool) -> Bool {
        if requestID == 0 {
            // Only this loop adds events.
            guard !force else {
                for sink in eventSinks.values { _ = sink.offer(event, force: true) }
                return true
            }
            return LocalAPIEventStream.offer(event, toAll: eventSinks.values)
        }
        guard let sink = eventSinks[requestID] else { return true }
        return sink.offer(event, force: force)
    }

    private func answerQueuedReplies() {
        var index = queueHead + 1
        while index < queue.count {
            if case .answer(let frame) = queue[index] {
                queue[index] = nil
                guard answer(frame) else { return }
            }
            index += 1
        }
    }

    /// Completes the request `frame` answers; false when it was a connection-level error, which
    /// failed everything (the queue was handed over and emptied).
    private func answer(_ frame: LocalAPIFrame) -> Bool {
        if frame.requestID == 0, frame.kind == .error {
            let body = (try? LocalAPIJSON.decode(LocalAPIErrorBody.self, from: frame.body, operation: frame.operation))
                ?? LocalAPIErrorBody(code: "unknown", message: "meshd reported a connection error")
            failAll(MeshClientError.daemon(body))
            return false
        } else if let sink = pending.removeValue(forKey: frame.requestID) {
            if frame.kind == .error, let events = eventSinks.removeValue(forKey: frame.requestID) { events.finish() }
            sink.complete(.success(frame))
        }
        return true
    }

    private func failAll(_ error: MeshClientError) {
        guard closedError == nil else { return }
        closedError = error
        // The connection is over: what was read reaches the streams whatever their bounds
        // (at most the reserve and one read burst), then they end.
        deliver(force: true)
        let sinks = pending.values
        pending.removeAll()
        for sink in sinks { sink.complete(.failure(error)) }
        let streams = eventSinks.values
        eventSinks.removeAll()
        for stream in streams { stream.finish() }
    }

    /// Unregisters an attach's stream that ended (its id may then be reused), and moves on if
    /// events for it were waiting. Call on the loop; nothing happens when it is not (or no
    /// longer) registered.
    func forget(_ stream: LocalAPIEventStream) {
        guard let id = eventSinks.first(where: { $0.value === stream })?.key else { return }
        eventSinks.removeValue(forKey: id)
        resumeDelivery()
    }

    /// Unregisters a handler attach whose request failed or was cancelled, and ends it (its
    /// `onEnd` runs here, on the loop, after its last event). Call on the loop.
    func end(_ handler: LocalAPIEventStream) {
        forget(handler)
        handler.finish()
    }

    /// No request written on this connection awaits its reply.
    var awaitsNoReply: Bool { pending.isEmpty }

    /// Attach streams registered now (for tests).
    var registeredEventStreams: Int { eventSinks.count }

    /// Events each registered stream holds now (for tests).
    var bufferedEventCounts: [Int] { eventSinks.values.map(\.count) }

    /// Frames read and not yet handed over (for tests).
    var queuedFrames: Int { queue[queueHead...].reduce(0) { $0 + ($1 == nil ? 0 : 1) } }
}
