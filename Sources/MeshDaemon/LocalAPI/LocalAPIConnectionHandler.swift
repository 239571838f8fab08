#if canImport(Glibc)
import Glibc
#endif
import Logging
import MeshLocalAPI
import NIOCore

/// Serves one local API client: checks request frames, runs them through a
/// `LocalAPIDispatcher` concurrently, writes replies, and applies `LocalAPIFlowControl`.
///
/// Sits after `LocalAPIFrameDecoder` and `LocalAPIFrameEncoder`. Malformed input gets an error
/// frame and the connection is closed; nothing a client sends can affect another connection.
/// Requests still running when the connection closes are cancelled.
final class LocalAPIConnectionHandler: ChannelDuplexHandler {
    typealias InboundIn = LocalAPIFrame
    typealias OutboundIn = LocalAPIFrame
    typealias OutboundOut = LocalAPIFrame

    private let dispatcher: LocalAPIDispatcher
    private let counters: LocalAPICounters
    private var logger: Logger
    private var flow: LocalAPIFlowControl
    private var tasks: [UInt64: Task<Void, Never>] = [:]
    /// Reliable sends started without a task (`startReliableImmediately`) whose commit is not
    /// done yet: the connection closes only after their replies.
    private var reliableStarted = 0
    private var queue: [(request: LocalAPIRequest, operation: LocalAPIOperation, requestID: UInt32, bytes: Int)] = []
    private var queueHead = 0
    private var nextTaskKey: UInt64 = 0
    private var credentials: PeerCredentials?
    private var closing = false
    private var inputClosed = false
    private var lastWrite: EventLoopFuture<Void>?
    private var connection: LocalAPIConnectionContext?
    /// Replies written during this read burst and not flushed yet (flushed on read complete).
    private var flushPending = false
    /// A loop task will flush (replies finished by tasks in one loop turn share one write).
    private var flushScheduled = false
    /// A realtime send was performed in this read: its datagram goes out before the replies.
    private var sentImmediately = false
    /// Inbox items among the events shed, offered to their attachments again once the client
    /// caught up (they never reached it), with the later inbox items that wait behind them.
    private var shedInbox = ShedInboxOrder()
    /// The pipeline's frame writer and its context, for events written straight to it
    /// (`writeEvent`); nil before the connection is active and after it ended.
    private var frameWriter: (writer: LocalAPIFrameWriter, context: ChannelHandlerContext)?
    /// A round of shed inbox items is being handed to the router (see `reofferShedInbox`).
    private var reofferRunning = false
    /// Shed inbox items offered again per round. Offering all of a long backlog at once overran
    /// the socket again and shed most of it anew (≈ 5 rounds per item in the 8 KiB test); in
    /// rounds, the next starts when the last was handed and the client still keeps up.
    static let reofferRound = 64

    /// Whether another whole frame follows the one being read (set by the decoder; nil: unknown,
    /// treated as none).
    private let lookahead: LocalAPIFrameLookahead?
    /// The client's uid's share of the server (bytes of running requests), when limited.
    private let budget: LocalAPIUIDBudget?
    /// Bytes this connection holds of `budget` now (given back when it closes).
    private var budgetBytes = 0
    /// Registered with `budget` to be woken when room frees up.
    private var waitingForBudget = false

    /// Creates the handler. `credentials`, when the server read them before the handler was
    /// added, are used from the first request on (else they are read when the channel is active).
    init(dispatcher: LocalAPIDispatcher, counters: LocalAPICounters, flow: LocalAPIFlowControl,
         lookahead: LocalAPIFrameLookahead? = nil, credentials: PeerCredentials? = nil,
         budget: LocalAPIUIDBudget? = nil, logger: Logger) {
        self.dispatcher = dispatcher
        self.counters = counters
        self.flow = flow
        self.lookahead = lookahead
        self.credentials = credentials
        self.budget = budget
        self.logger = logger
        if let credentials {
            self.logger[metadataKey: "client.pid"] = "\(credentials.pid)"
            self.logger[metadataKey: "client.uid"] = "\(credentials.uid)"
        }
    }

    private var budgetUID: UInt32 { credentials?.uid ?? LocalAPIUIDBudget.unknownUID }

    /// Asks the uid's budget for a request's bytes (the flow control's `admit`).
    private func admit(_ bytes: Int) -> Bool {
        guard let budget else { return true }
        guard budget.reserve(uid: budgetUID, bytes: bytes) else { return false }
        budgetBytes += bytes
        return true
    }

    /// Gives a finished request's bytes back to the uid's budget.
    private func releaseBudget(_ bytes: Int) {
        guard let budget, bytes > 0 else { return }
        let given = min(bytes, budgetBytes)
        budgetBytes -= given
        budget.release(uid: budgetUID, bytes: given)
    }

    /// After the flow control said `waitingForRoom`: be woken (on this loop) when the uid's
    /// other requests give bytes back.
    private func waitForBudget(context: ChannelHandlerContext) {
        guard let budget, flow.waitingForRoom, !waitingForBudget, !closing else { return }
        waitingForBudget = true
        counters.add(.uidBudgetWaits)
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        let boundContext = NIOLoopBound(context, eventLoop: context.eventLoop)
        let loop = context.eventLoop
        budget.waitForRoom(uid: budgetUID, waiter: ObjectIdentifier(self)) {
            loop.execute {
                let this = handler.value
                this.waitingForBudget = false
                guard !this.closing else { return }
                this.apply(this.flow.roomFreed(admit: this.admit), context: boundContext.value)
            }
        }
    }

    func channelActive(context: ChannelHandlerContext) {
        counters.add(.connectionsAccepted)
        connection = LocalAPIConnectionContext(channel: context.channel)
        if let writerContext = try? context.pipeline.syncOperations.context(handlerType: LocalAPIFrameWriter.self),
           let writer = writerContext.handler as? LocalAPIFrameWriter {
            frameWriter = (writer, writerContext)
            connection?.eventWriter = self
        }
        if credentials == nil {
            readCredentials(context: context)
        } else {
            logger.debug("local API client connected")
        }
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        closing = true
        frameWriter = nil
        for task in tasks.values { task.cancel() }
        tasks.removeAll()
        if let budget {
            if waitingForBudget { budget.stopWaiting(uid: budgetUID, waiter: ObjectIdentifier(self)) }
            waitingForBudget = false
            releaseBudget(budgetBytes)
        }
        if let ids = connection?.close(), !ids.isEmpty, let router = dispatcher.router {
            Task { for id in ids { await router.detach(id) } }
        }
        logger.debug("local API client disconnected")
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !closing else { return }
        let frame = unwrapInboundIn(data)
        let bytes = frame.body.readableBytes
        let request: LocalAPIRequest
        do {
            request = try LocalAPIRequest.parse(frame)
        } catch {
            counters.add(.requests)
            if error.closesConnection {
                counters.add(.malformedInput)
                logger.debug("malformed local API request; closing", metadata: ["error.code": "\(error.body.code)"])
                sendErrorAndClose(context: context, error.body, operation: frame.operation, requestID: frame.requestID)
            } else {
                write(context: context, error: error.body, operation: frame.operation, requestID: frame.requestID)
            }
            return
        }
        switch flow.requestArrived(bytes: bytes, admit: admit) {
        case .start:
            // Hot operations finish here, on the router's loop, with no task; only while no other
            // request of this connection runs, so replies and side effects keep arrival order.
            // The last frame of a read burst sends its realtime datagram before the reply is made;
            // earlier ones leave packed with it, or at the end of the burst.
            let lastOfBurst = !(lookahead?.anotherFrameBuffered ?? false)
            if tasks.isEmpty, let reply = dispatcher.performImmediately(request, uid: credentials?.uid, on: context.eventLoop,
                                                                        sendNow: lastOfBurst) {
                counters.add(.requests)
                if let (writer, writerContext) = frameWriter {
                    // Straight into the frame writer's buffer, without a promise (closeIfDrained
                    // waits for these behind a barrier): no body buffer, no NIOAny, no future.
                    writer.appendFrame(kind: .reply, operation: frame.operation, requestID: frame.requestID,
                                       bodyLength: reply.bodyLength, context: writerContext) { reply.write(to: &$0) }
                } else {
                    lastWrite = context.write(wrapOutboundOut(LocalAPIFrame(kind: .reply, operation: frame.operation,
                                                                            requestID: frame.requestID, body: reply.body)))
                }
                flushPending = true
                sentImmediately = true
                releaseBudget(bytes)
                apply(flow.requestFinished(bytes: bytes, admit: admit), context: context)
                return
            }
            begin(request, operation: frame.operation, requestID: frame.requestID, bytes: bytes, context: context)
        case .queue:
            queue.append((request, frame.operation, frame.requestID, bytes))
            waitForBudget(context: context)
        case .reject:
            counters.add(.slowReaderCloses)
            logger.warning("local API client exceeded the request queue limit; closing",
                           metadata: ["api.queued": "\(flow.queued)"])
            sendErrorAndClose(context: context, LocalAPIErrorBody(
                code: LocalAPIErrorBody.Code.tooManyRequests,
                message: "more than \(flow.maximumQueued) requests waiting; read the replies before sending more"),
                operation: frame.operation, requestID: frame.requestID)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if sentImmediately {
            // The read burst's realtime items leave (packed) before its app wakes up for the replies.
            sentImmediately = false
            dispatcher.flushImmediateSends(on: context.eventLoop)
        }
        flushIfPending(context: context)
        context.fireChannelReadComplete()
    }

    /// Flushes once the current loop turn is done, so replies finished together share a write.
    private func scheduleFlush(context: ChannelHandlerContext) {
        flushPending = true
        guard !flushScheduled else { return }
        flushScheduled = true
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        let boundContext = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.eventLoop.execute {
            handler.value.flushScheduled = false
            handler.value.flushIfPending(context: boundContext.value)
        }
    }

    private func flushIfPending(context: ChannelHandlerContext) {
        guard flushPending else { return }
        flushPending = false
        context.flush()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard !closing else { return }
        if let framing = error as? LocalAPIFramingError {
            counters.add(.malformedInput)
            logger.debug("malformed local API frame; closing", metadata: ["error.code": "\(framing.code)"])
            sendErrorAndClose(context: context, framing.errorBody, operation: .unspecified, requestID: framing.requestID)
        } else {
            logger.debug("local API connection error; closing", metadata: ["error": "\(error)"])
            closing = true
            context.close(promise: nil)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .some(NIOCore.ChannelEvent.inputClosed) = event as? NIOCore.ChannelEvent {
            // The client shut down its write side: answer what it sent, then close.
            inputClosed = true
            closeIfDrained(context: context)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        apply(flow.writabilityChanged(to: context.channel.isWritable, admit: admit), context: context)
        context.fireChannelWritabilityChanged()
    }

    func read(context: ChannelHandlerContext) {
        switch flow.readRequested() {
        case .forward:
            context.read()
        case .hold(let newlyPaused):
            if newlyPaused { counters.add(.slowReaderPauses) }
        }
    }

    func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        guard let shed = event as? LocalAPIEventsShed else {
            context.triggerUserOutboundEvent(event, promise: promise)
            return
        }
        promise?.succeed(())
        counters.add(.eventsShed, shed.count)
        // Live realtime envelopes (gone) and attach events shed before the reply (inbox items
        // among them are offered again, like those this connection shed).
        shedInbox.note(shed.inboxItems, for: shed.requestID)
        guard !closing, let count = flow.eventsShedElsewhere(shed.count) else { return }
        writeShedReport(count, context: context)
        reofferShedInbox(context: context)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let frame = unwrapOutboundIn(data)
        if frame.kind == .event, !offer(frame) {
            promise?.succeed(())
            return
        }
        context.write(data, promise: promise)
    }

    /// An attachment's event, on the event loop: what `write` does with it, handed straight to
    /// the frame writer (the next handler outbound) instead of through the pipeline from its
    /// tail — ≈ 5 600 instructions per delivered event went to wrapping, casting and passing
    /// it along. False when the connection is not active; the caller then writes through the
    /// channel, which drops it once closed.
    func writeEvent(_ frame: LocalAPIFrame) -> Bool {
        guard let (writer, writerContext) = frameWriter else { return false }
        if offer(frame) { writer.append(frame, context: writerContext) }
        return true
    }

    /// An attachment's envelope event, on the event loop, built in place in the frame writer's
    /// buffer (`writeEvent` without the event's own frame and body buffer, ≈ 2 500 instructions
    /// per delivered envelope). False when the connection is not active.
    func writeEnvelopeEvent(requestID: UInt32, from: String, inboxID: Int64, redelivery: Bool, mode: UInt8,
                            encoded: [UInt8]) -> Bool {
        guard let (writer, writerContext) = frameWriter else { return false }
        let item = inboxID != 0 ? ShedInboxItem(inboxID: inboxID, redelivery: redelivery) : nil
        guard offer(item, requestID: requestID) else { return true }
        writer.appendFrame(kind: .event, operation: LocalAPIOperation.envelopeEvent, flags: .binaryBody, requestID: requestID,
                           bodyLength: LocalAPIEventFrames.envelopeBodyLength(from: from, encoded: encoded),
                           context: writerContext) { body in
            LocalAPIEventFrames.writeEnvelopeBody(from: from, inboxID: inboxID, redelivery: redelivery, mode: mode,
                                                  encoded: encoded, to: &body)
        }
        return true
    }

    /// Flushes the frame writer straight (the event sinks' end-of-turn flush), without the
    /// trip through the pipeline from its tail. False when the connection is not active.
    func flushEvents() -> Bool {
        guard let (writer, writerContext) = frameWriter else { return false }
        writer.flush(context: writerContext)
        return true
    }

    /// The slow-reader policy for one event: false when it is shed (counted, inbox items noted),
    /// or when it is an inbox item that must wait behind an earlier one of its attachment to be
    /// offered again (noted with it, counted apart: the client is not told, it gets them all).
    private func offer(_ frame: LocalAPIFrame) -> Bool {
        offer(Self.inboxItem(frame), requestID: frame.requestID)
    }

    /// `offer` for an event of the attachment `requestID` carrying the inbox item `item` (nil:
    /// not an inbox item).
    private func offer(_ item: ShedInboxItem?, requestID: UInt32) -> Bool {
        if shedInbox.holdsBack, let item, shedInbox.mustWait(item, requestID: requestID) {
            counters.add(.eventsHeldForOrder)
            shedInbox.note([item], for: requestID)
            return false
        }
        guard !flow.eventOffered() else { return true }
        counters.add(.eventsShed)
        if let item { shedInbox.note([item], for: requestID) }
        return false
    }

    // MARK: - Requests

    private func apply(_ progress: LocalAPIFlowControl.Progress, context: ChannelHandlerContext) {
        guard !closing else { return }
        if let dropped = progress.reportShed { writeShedReport(dropped, context: context) }
        reofferShedInbox(context: context)
        for _ in 0..<progress.startQueued where queueHead < queue.count {
            let next = queue[queueHead]
            queueHead += 1
            begin(next.request, operation: next.operation, requestID: next.requestID, bytes: next.bytes, context: context)
        }
        if queueHead == queue.count {
            queue.removeAll(keepingCapacity: queue.count < 64)
            queueHead = 0
        }
        if progress.resumeReading { context.read() }
        waitForBudget(context: context)
    }

    private func start(_ request: LocalAPIRequest, operation: LocalAPIOperation, requestID: UInt32, bytes: Int,
                       context: ChannelHandlerContext) {
        let key = nextTaskKey
        nextTaskKey &+= 1
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        let boundContext = NIOLoopBound(context, eventLoop: context.eventLoop)
        let eventLoop = context.eventLoop
        let dispatcher = self.dispatcher
        let credentials = self.credentials
        let connection = self.connection
        // On the router's loop when this connection is served there: the request, the router and
        // the reply then stay on one thread.
        let executor = dispatcher.router.flatMap { $0.loop === eventLoop ? $0.taskExecutor : nil }
        tasks[key] = Task(executorPreference: executor) {
            let outcome = await LocalAPIDispatcher.$currentRequestID.withValue(requestID) {
                await dispatcher.perform(request, credentials: credentials, connection: connection)
            }
            if eventLoop.inEventLoop {
                handler.value.finish(key: key, operation: operation, requestID: requestID, bytes: bytes, outcome: outcome,
                                     context: boundContext.value)
            } else {
                eventLoop.execute {
                    handler.value.finish(key: key, operation: operation, requestID: requestID, bytes: bytes, outcome: outcome,
                                         context: boundContext.value)
                }
            }
        }
    }

    /// Starts a request: a reliable send without a task when it can be (`startReliable`), anything
    /// else as a task.
    private func begin(_ request: LocalAPIRequest, operation: LocalAPIOperation, requestID: UInt32, bytes: Int,
                       context: ChannelHandlerContext) {
        logger.trace("local API request", metadata: ["api.op": "\(operation.name)", "api.request": "\(requestID)"])
        if tasks.isEmpty, startReliable(request, operation: operation, requestID: requestID, bytes: bytes, context: context) { return }
        start(request, operation: operation, requestID: requestID, bytes: bytes, context: context)
    }

    /// A reliable send, started at once on the router's loop when this connection is served
    /// there: no task, and the replies of one commit come in one loop turn. Only while no task
    /// of this connection runs (as the immediate path), so this connection's sends reach the
    /// committer in arrival order. False: start it as a task.
    private func startReliable(_ request: LocalAPIRequest, operation: LocalAPIOperation, requestID: UInt32, bytes: Int,
                               context: ChannelHandlerContext) -> Bool {
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        let boundContext = NIOLoopBound(context, eventLoop: context.eventLoop)
        // The reply never runs before the start returns (it comes from the commit thread).
        let started = dispatcher.startReliableImmediately(request, uid: credentials?.uid, on: context.eventLoop) { outcome in
            let handler = handler.value
            handler.reliableStarted -= 1
            guard !handler.closing else { return }
            handler.finish(operation: operation, requestID: requestID, bytes: bytes, outcome: outcome, context: boundContext.value)
        }
        if started { reliableStarted += 1 }
        return started
    }

    private func finish(key: UInt64, operation: LocalAPIOperation, requestID: UInt32, bytes: Int,
                        outcome: Result<ByteBuffer, LocalAPIErrorBody>, context: ChannelHandlerContext) {
        guard tasks.removeValue(forKey: key) != nil, !closing else { return }
        finish(operation: operation, requestID: requestID, bytes: bytes, outcome: outcome, context: context)
    }

    /// Writes the reply of a finished request and lets the flow control start the next.
    private func finish(operation: LocalAPIOperation, requestID: UInt32, bytes: Int,
                        outcome: Result<ByteBuffer, LocalAPIErrorBody>, context: ChannelHandlerContext) {
        counters.add(.requests)
        switch outcome {
        case .success(let body):
            let flags: LocalAPIFrame.Flags = operation.repliesWithBinaryBody ? .binaryBody : []
            lastWrite = context.write(wrapOutboundOut(LocalAPIFrame(kind: .reply, operation: operation, flags: flags,
                                                                    requestID: requestID, body: body)))
            scheduleFlush(context: context)
            if operation == .attach { connection?.replyWritten(requestID: requestID) }
        case .failure(let error):
            write(context: context, error: error, operation: operation, requestID: requestID)
        }
        releaseBudget(bytes)
        apply(flow.requestFinished(bytes: bytes, admit: admit), context: context)
        closeIfDrained(context: context)
    }

    private func closeIfDrained(context: ChannelHandlerContext) {
        guard inputClosed, !closing, tasks.isEmpty, reliableStarted == 0, queueHead == queue.count else { return }
        flushIfPending(context: context)
        closing = true
        let channel = context.channel
        if let (writer, writerContext) = frameWriter {
            // Replies appended without a promise are written before the close: an empty write
            // queued after everything completes only after them (writes complete in order).
            writer.flush(context: writerContext)
            let drained = context.eventLoop.makePromise(of: Void.self)
            writerContext.writeAndFlush(NIOAny(ByteBuffer()), promise: drained)
            drained.futureResult.whenComplete { _ in channel.close(promise: nil) }
        } else if let lastWrite {
            lastWrite.whenComplete { _ in channel.close(promise: nil) }
        } else {
            channel.close(promise: nil)
        }
    }

    // MARK: - Output

    /// The inbox item an `envelope` event frame carries (nil for realtime envelopes and other
    /// events): its id and redelivery flag, the body's first 9 bytes (docs/LOCAL-API.md § events).
    static func inboxItem(_ frame: LocalAPIFrame) -> ShedInboxItem? {
        guard frame.operation == .envelopeEvent,
              let flags = frame.body.getInteger(at: frame.body.readerIndex, as: UInt8.self),
              let inboxID = frame.body.getInteger(at: frame.body.readerIndex + 1, as: UInt64.self),
              inboxID != 0 else { return nil }
        return ShedInboxItem(inboxID: Int64(bitPattern: inboxID), redelivery: flags & 1 != 0)
    }

    /// Offers the next round of shed inbox items to their attachments, while the client keeps
    /// up (writable) and no round runs; items of attachments that ended are forgotten (the
    /// next attach replays the inbox). Called whenever the flow state may have changed, and
    /// when a round was handed.
    private func reofferShedInbox(context: ChannelHandlerContext) {
        guard !closing, !reofferRunning, flow.writable, !shedInbox.isEmpty else { return }
        guard let router = dispatcher.router, let sinks = connection?.allSinks() else {
            shedInbox.forgetAll()
            return
        }
        var sinkOf: [UInt32: LocalAPIEventSink] = [:]
        for sink in sinks where sinkOf[sink.requestID] == nil { sinkOf[sink.requestID] = sink }
        let round = shedInbox.takeRound(room: Self.reofferRound) { sinkOf[$0] }
        guard !round.isEmpty else { return }
        reofferRunning = true
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        let boundContext = NIOLoopBound(context, eventLoop: context.eventLoop)
        let loop = context.eventLoop
        Task {
            for (sink, items) in round { await router.reoffer(items, to: sink) }
            // After the flush the round's events scheduled, so writability is up to date.
            loop.execute {
                handler.value.shedInbox.roundHanded()
                handler.value.reofferRunning = false
                handler.value.reofferShedInbox(context: boundContext.value)
            }
        }
    }

    /// Writes an `events.dropped` event with `count`.
    private func writeShedReport(_ count: UInt64, context: ChannelHandlerContext) {
        guard let body = try? LocalAPIJSON.encode(EventsDroppedEvent(dropped: count)) else { return }
        context.writeAndFlush(wrapOutboundOut(LocalAPIFrame(kind: .event, operation: .eventsDropped,
                                                            requestID: 0, body: body)), promise: nil)
    }

    private func write(context: ChannelHandlerContext, error: LocalAPIErrorBody, operation: LocalAPIOperation, requestID: UInt32) {
        let body = (try? LocalAPIJSON.encode(error)) ?? ByteBuffer()
        lastWrite = context.writeAndFlush(wrapOutboundOut(LocalAPIFrame(kind: .error, operation: operation,
                                                                        requestID: requestID, body: body)))
    }

    private func sendErrorAndClose(context: ChannelHandlerContext, _ error: LocalAPIErrorBody,
                                   operation: LocalAPIOperation, requestID: UInt32) {
        closing = true
        for task in tasks.values { task.cancel() }
        tasks.removeAll()
        queue.removeAll()
        let body = (try? LocalAPIJSON.encode(error)) ?? ByteBuffer()
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(LocalAPIFrame(kind: .error, operation: operation,
                                                            requestID: requestID, body: body)))
            .whenComplete { _ in channel.close(promise: nil) }
    }

    // MARK: - Credentials

    private func readCredentials(context: ChannelHandlerContext) {
        #if canImport(Glibc)
        guard let provider = context.channel as? any SocketOptionProvider else { return }
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        let future: EventLoopFuture<PeerCredentials> = provider.unsafeGetSocketOption(
            level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(SO_PEERCRED))
        future.whenSuccess { credentials in
            let this = handler.value
            this.credentials = credentials
            this.logger[metadataKey: "client.pid"] = "\(credentials.pid)"
            this.logger[metadataKey: "client.uid"] = "\(credentials.uid)"
            this.logger.debug("local API client connected")
        }
        #endif
    }
}
