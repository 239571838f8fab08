#if canImport(Glibc)
import Glibc
#endif
import Logging
import MeshLocalAPI
import NIOCore

/// Serves one local API client: the thin I/O around `LocalAPIConnectionState`, which decides.
///
/// Sits after `LocalAPIFrameDecoder` and a `LocalAPIFrameWriter`, into which it writes every
/// reply and event straight (skipping the pipeline's wrapping and casts per frame). Each
/// request goes the one way `LocalAPIConnectionState` and `LocalAPIDispatcher.start` give it;
/// each event for an attachment comes from its `LocalAPIEventSink` through `received`.
/// Malformed input gets an error frame and the connection is closed; nothing a client sends
/// can affect another connection. Requests still running when the connection closes are
/// cancelled.
final class LocalAPIConnectionHandler: ChannelDuplexHandler {
    typealias InboundIn = LocalAPIFrame
    typealias OutboundIn = LocalAPIFrame
    typealias OutboundOut = LocalAPIFrame

    let dispatcher: LocalAPIDispatcher
    let counters: LocalAPICounters
    var logger: Logger
    var state: LocalAPIConnectionState
    /// Whether another whole frame follows the one being read (set by the decoder; nil:
    /// unknown, treated as none).
    private let lookahead: LocalAPIFrameLookahead?
    /// The client's uid's share of the server (bytes of running requests), when limited.
    private let budget: LocalAPIUIDBudget?
    /// Bytes this connection holds of `budget` now (given back when it closes).
    private var budgetBytes = 0
    /// Registered with `budget` to be woken when room frees up.
    private var waitingForBudget = false
    private var credentials: PeerCredentials?
    /// This handler's context while it is in the pipeline (for replies and events that come
    /// later, on the loop).
    var context: ChannelHandlerContext?
    /// The frame writer and its context, once the channel is active.
    var output: (writer: LocalAPIFrameWriter, context: ChannelHandlerContext)?
    var connection: LocalAPIConnectionContext?
    /// Requests performed by tasks, by key (cancelled when the connection closes).
    private var tasks: [UInt64: Task<Void, Never>] = [:]
    private var nextTaskKey: UInt64 = 0
    /// `channelRead` is running: replies written now are flushed when the read burst ends.
    private var reading = false
    /// Queued requests are being started (an answer given meanwhile does not start more).
    private var startingQueued = false
    /// The timer of the state's next deadline, and when it fires (`+Deadline`).
    var deadlineTimer: (task: Scheduled<Void>, at: UInt64)?
    /// Where the warnings a client can repeat go, rate-limited (nil: to `logger` at `debug`).
    let warnings: LocalAPIWarnings?

    /// Creates the handler. `credentials`, when the server read them before the handler was
    /// added, are used from the first request on (else they are read when the channel is active).
    /// `deadlines`: close a connection that sends no first request, or leaves a frame
    /// half-sent, in time (they need `lookahead`; nil: no deadlines).
    init(dispatcher: LocalAPIDispatcher, counters: LocalAPICounters, flow: LocalAPIFlowControl,
         lookahead: LocalAPIFrameLookahead? = nil, credentials: PeerCredentials? = nil,
         budget: LocalAPIUIDBudget? = nil, deadlines: LocalAPIConnectionDeadline.Limits? = nil,
         warnings: LocalAPIWarnings? = nil, logger: Logger) {
        self.dispatcher = dispatcher
        self.counters = counters
        self.state = LocalAPIConnectionState(
            flow: flow, deadline: deadlines.map { LocalAPIConnectionDeadline(limits: $0, acceptedAt: Self.now()) })
        self.warnings = warnings
        self.lookahead = lookahead
        self.credentials = credentials
        self.budget = budget
        self.logger = logger
        if let credentials { noteClient(credentials) }
    }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    func handlerRemoved(context: ChannelHandlerContext) { self.context = nil }

    func channelActive(context: ChannelHandlerContext) {
        counters.add(.connectionsAccepted)
        connection = LocalAPIConnectionContext(events: LocalAPIEventLink(handler: self, loop: context.eventLoop))
        if let writerContext = try? context.pipeline.syncOperations.context(handlerType: LocalAPIFrameWriter.self),
           let writer = writerContext.handler as? LocalAPIFrameWriter {
            output = (writer, writerContext)
        } else {
            logger.error("local API pipeline has no LocalAPIFrameWriter; closing the connection")
            state.close()
            context.close(promise: nil)
        }
        if credentials == nil {
            readCredentials(context: context)
        } else {
            logger.debug("local API client connected")
        }
        armDeadline()
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        state.close()
        deadlineTimer?.task.cancel()
        deadlineTimer = nil
        output = nil
        for task in tasks.values { task.cancel() }
        tasks.removeAll()
        if let budget {
            if waitingForBudget { budget.stopWaiting(uid: budgetUID, waiter: ObjectIdentifier(self)) }
            waitingForBudget = false
            releaseBudget(budgetBytes)
        }
        if let ids = connection?.close(), !ids.isEmpty, let router = dispatcher.router {
            // One of the router's tasks: it stops only after the detach has run.
            router.spawnTracked { router in for id in ids { await router.detach(id) } }
        }
        logger.debug("local API client disconnected")
        context.fireChannelInactive()
    }

    // MARK: - Requests

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        let parsed: Result<LocalAPIRequest, LocalAPIRequest.Rejection>
        do { parsed = .success(try LocalAPIRequest.parse(frame)) } catch { parsed = .failure(error) }
        reading = true
        defer { reading = false }
        switch state.requestRead(parsed, operation: frame.operation, requestID: frame.requestID, bytes: frame.body.readableBytes,
                                 moreBuffered: lookahead?.anotherFrameBuffered ?? false, admit: admit) {
        case .perform(let start):
            perform(start)
            startQueued()
        case .queued(let waitForBudget):
            if waitForBudget { self.waitForBudget() }
        case .answer(let error):
            counters.add(.requests)
            writeError(error, operation: frame.operation, requestID: frame.requestID)
        case .answerAndClose(let error):
            if case .failure = parsed {
                counters.add(.requests)
                counters.add(.malformedInput)
                logger.debug("malformed local API request; closing", metadata: ["error.code": "\(error.code)"])
            } else {
                counters.add(.slowReaderCloses)
                let queued = state.flow.queued
                if let warnings {
                    warnings.warn(.queueLimit, metadata: ["api.queued": "\(queued)", "client.uid": "\(budgetUID)"])
                } else {
                    logger.debug("local API client exceeded the request queue limit; closing", metadata: ["api.queued": "\(queued)"])
                }
            }
            answerAndClose(error, operation: frame.operation, requestID: frame.requestID)
        case .ignore:
            break
        }
    }

    /// Performs one request (the one way every request goes).
    private func perform(_ start: LocalAPIStart) {
        guard let context else { return }
        let pending = start.pending
        logger.trace("local API request", metadata: ["api.op": "\(pending.operation.name)", "api.request": "\(pending.requestID)"])
        let key = nextTaskKey
        nextTaskKey &+= 1
        let requestContext = LocalAPIRequestContext(credentials: credentials, requestID: pending.requestID,
                                                    connection: connection, attach: start.attach)
        let loop = context.eventLoop
        // The answer callback (and its copy of `start`) is made only for a request not answered
        // within the call.
        switch dispatcher.start(start, context: requestContext, on: loop, answer: {
            let handler = NIOLoopBound(self, eventLoop: loop)
            return { reply in handler.value.answered(start, reply: reply, key: key) }
        }) {
        case .answered(let reply):
            answered(start, reply: reply, key: nil)
        case .answerComes:
            break
        case .task(let task):
            tasks[key] = task
            state.performedByTask()
        }
    }

    /// Writes the reply to a request and lets the state go on. `key`: the request's task key,
    /// nil when it was answered within `perform`.
    private func answered(_ start: LocalAPIStart, reply: LocalAPIReply, key: UInt64?) {
        let byTask = key.map { tasks.removeValue(forKey: $0) != nil } ?? false
        guard state.phase != .closing else { return }
        let pending = start.pending
        counters.add(.requests)
        switch reply {
        case .success(let body):
            let flags: LocalAPIFrame.Flags = pending.operation.repliesWithBinaryBody ? .binaryBody : []
            if let output {
                output.writer.appendFrame(kind: .reply, operation: pending.operation, flags: flags, requestID: pending.requestID,
                                          bodyLength: body.length, context: output.context) { body.write(to: &$0) }
            }
        case .failure(let error):
            writeFrame(.error, pending.operation, requestID: pending.requestID, json: error)
        }
        if start.attach != nil { attachAnswered(start, succeeded: reply.isSuccess) }
        releaseBudget(pending.bytes)
        apply(state.requestAnswered(bytes: pending.bytes, byTask: byTask, inRead: reading, admit: admit))
        startQueued()
        closeIfDrained()
    }

    /// Starts the queued requests the state lets start (answers given meanwhile join this loop).
    private func startQueued() {
        guard !startingQueued else { return }
        startingQueued = true
        defer { startingQueued = false }
        while let next = state.nextStart() { perform(next) }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        noteReadEnded(partialFrame: lookahead?.partialFrameBuffered ?? false)
        let burst = state.readBurstEnded()
        // The read burst's realtime items leave (packed) before its app wakes up for the replies.
        if burst.sendRealtime { dispatcher.flushRealtime(on: context.eventLoop) }
        if burst.flush, let output { output.writer.flush(context: output.context) }
        context.fireChannelReadComplete()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard state.phase != .closing else { return }
        if let framing = error as? LocalAPIFramingError {
            counters.add(.malformedInput)
            logger.debug("malformed local API frame; closing", metadata: ["error.code": "\(framing.code)"])
            answerAndClose(framing.errorBody, operation: .unspecified, requestID: framing.requestID)
        } else {
            logger.debug("local API connection error; closing", metadata: ["error": "\(error)"])
            state.close()
            context.close(promise: nil)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .some(NIOCore.ChannelEvent.inputClosed) = event as? NIOCore.ChannelEvent {
            // The client shut down its write side: answer what it sent, then close.
            state.inputClosed()
            closeIfDrained()
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        apply(state.writabilityChanged(to: context.channel.isWritable, admit: admit))
        startQueued()
        context.fireChannelWritabilityChanged()
    }

    func read(context: ChannelHandlerContext) {
        switch state.readRequested() {
        case .forward:
            context.read()
        case .hold(let newlyPaused):
            if newlyPaused { counters.add(.slowReaderPauses) }
        }
    }

    /// Does what the state asked for besides starting queued requests.
    func apply(_ actions: LocalAPIConnectionActions) {
        if let count = actions.reportShed { writeShedReport(count) }
        if actions.resumeReading {
            noteReadingResumed()
            context?.read()
        }
        if actions.waitForBudget { waitForBudget() }
        if actions.flush == .endOfTurn { scheduleFlush() }
        offerShedInbox()
    }

    private func closeIfDrained() {
        guard state.closeIfDrained() else { return }
        closeAfterWrites()
    }

    func answerAndClose(_ error: LocalAPIErrorBody, operation: LocalAPIOperation, requestID: UInt32) {
        state.close()
        for task in tasks.values { task.cancel() }
        tasks.removeAll()
        writeFrame(.error, operation, requestID: requestID, json: error)
        closeAfterWrites()
    }

    /// Closes once everything written so far has gone out: an empty write queued after the
    /// frames completes only after them (writes complete in order).
    private func closeAfterWrites() {
        guard let context else { return }
        let channel = context.channel
        guard let output else {
            channel.close(promise: nil)
            return
        }
        output.writer.flush(context: output.context)
        let drained = context.eventLoop.makePromise(of: Void.self)
        output.context.writeAndFlush(NIOAny(ByteBuffer()), promise: drained)
        drained.futureResult.whenComplete { _ in channel.close(promise: nil) }
    }

    // MARK: - The uid's budget

    var budgetUID: UInt32 { credentials?.uid ?? LocalAPIUIDBudget.unknownUID }

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

    /// Be woken (on this loop) when the uid's other requests give bytes back.
    private func waitForBudget() {
        guard let budget, let context, state.flow.waitingForRoom, !waitingForBudget, state.phase != .closing else { return }
        waitingForBudget = true
        counters.add(.uidBudgetWaits)
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        let loop = context.eventLoop
        budget.waitForRoom(uid: budgetUID, waiter: ObjectIdentifier(self)) {
            loop.execute {
                let this = handler.value
                this.waitingForBudget = false
                guard this.state.phase != .closing else { return }
                this.apply(this.state.budgetFreed(admit: this.admit))
                this.startQueued()
            }
        }
    }

    // MARK: - Credentials

    private func noteClient(_ credentials: PeerCredentials) {
        logger[metadataKey: "client.pid"] = "\(credentials.pid)"
        logger[metadataKey: "client.uid"] = "\(credentials.uid)"
    }

    private func readCredentials(context: ChannelHandlerContext) {
        #if canImport(Glibc)
        guard let provider = context.channel as? any SocketOptionProvider else { return }
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        let future: EventLoopFuture<PeerCredentials> = provider.unsafeGetSocketOption(
            level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(SO_PEERCRED))
        future.whenSuccess { credentials in
            let this = handler.value
            this.credentials = credentials
            this.noteClient(credentials)
            this.logger.debug("local API client connected")
        }
        #endif
    }
}

extension Result {
    fileprivate var isSuccess: Bool {
        if case .success = self { return true }
        return false
    }
}
