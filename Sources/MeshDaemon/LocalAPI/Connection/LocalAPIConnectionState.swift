import MeshLocalAPI

/// The decisions of one local API connection, as a value with no I/O: which request runs when,
/// when the connection reads, flushes and closes, and what becomes of each event for its
/// attachments. `LocalAPIConnectionHandler` feeds it what happened (a request read, a reply
/// ready, the channel's writability, an event) and does what the returned actions say.
///
/// Requests follow one path: read → `requestRead` → performed (`LocalAPIStart`) or queued by
/// `LocalAPIFlowControl` → `requestAnswered` → the queued ones that may start now come from
/// `nextStart`. A request may be answered within the call that performs it (a `send` the
/// router does at once) only while no request of this connection is suspended in a task, so
/// replies and side effects keep arrival order.
///
/// Events follow one path too (`eventArrived`, in `LocalAPIConnectionState+Events.swift`).
struct LocalAPIConnectionState {
    /// Where the connection is in its life.
    enum Phase: Equatable {
        /// Reading and answering.
        case serving
        /// The client shut its write side: answer what it sent, then close.
        case inputClosed
        /// Closing or closed: nothing more is performed or written.
        case closing
    }

    /// The slow-reader policy (requests in flight, queue, writability, shed count).
    private(set) var flow: LocalAPIFlowControl
    /// Where the connection is in its life.
    private(set) var phase: Phase = .serving
    /// Requests read and waiting for the flow control, oldest first (from `queueHead`).
    private var queue: [LocalAPIPendingRequest] = []
    private var queueHead = 0
    /// Queued requests the flow control let start and `nextStart` has not handed out yet.
    private var startable = 0
    /// Requests being performed by a task (suspended): while any is, none is answered at once.
    private(set) var suspended = 0
    /// A request read in this read burst was performed (its realtime datagrams leave at the
    /// burst's end).
    private var performedInBurst = false
    /// Frames were written and not flushed yet.
    private var flushPending = false
    /// A flush at the end of the loop turn is scheduled.
    private var flushScheduled = false

    /// Inbox items among the events shed, to offer again in order (`+Events`).
    var shedInbox = ShedInboxOrder()
    /// A round of shed inbox items is being handed to the router.
    var reofferRunning = false
    /// Request ids of this connection's attaches (events carry that id).
    var attachRequestIDs: Set<UInt32> = []
    /// Events for attachments whose attach reply is not written yet, per attach request.
    var holding: [UInt32: LocalAPIHeldEvents] = [:]

    /// Attachments one connection may have: they end only with the connection (there is no
    /// detach), and each one gets its own copy of every event of its features.
    static let maximumAttachments = 256
    /// Events held per attachment before its reply; beyond it they are shed (and reported).
    static let heldLimit = 8192

    /// The first-request and half-sent-frame deadlines (nil: the connection has none).
    var deadline: LocalAPIConnectionDeadline?

    /// Creates the state of a new connection with its flow control's limits and, if given, its
    /// deadlines (`+Deadline`).
    init(flow: LocalAPIFlowControl, deadline: LocalAPIConnectionDeadline? = nil) {
        self.flow = flow
        self.deadline = deadline
    }

    // MARK: - Requests

    /// What to do with a request frame just read.
    enum ReadAction: Equatable {
        /// Perform it now.
        case perform(LocalAPIStart)
        /// It waits in the queue; `waitForBudget`: the uid's budget has no room (be woken).
        case queued(waitForBudget: Bool)
        /// Answer with this error (the request is not performed).
        case answer(LocalAPIErrorBody)
        /// Answer with this error, then close the connection.
        case answerAndClose(LocalAPIErrorBody)
        /// Nothing (the connection is closing).
        case ignore
    }

    /// A request frame was read: `parsed` is the request or why it is refused, `bytes` its
    /// body length, `moreBuffered` whether another whole frame follows in this read. `admit`
    /// asks the uid's budget for the bytes (see `LocalAPIFlowControl.requestArrived`).
    mutating func requestRead(_ parsed: Result<LocalAPIRequest, LocalAPIRequest.Rejection>, operation: LocalAPIOperation,
                              requestID: UInt32, bytes: Int, moreBuffered: Bool, admit: (Int) -> Bool) -> ReadAction {
        guard phase != .closing else { return .ignore }
        deadline?.requestRead()
        let request: LocalAPIRequest
        switch parsed {
        case .success(let parsed):
            request = parsed
        case .failure(let rejection):
            guard rejection.closesConnection else { return .answer(rejection.body) }
            phase = .closing
            return .answerAndClose(rejection.body)
        }
        let pending = LocalAPIPendingRequest(request: request, operation: operation, requestID: requestID, bytes: bytes)
        switch flow.requestArrived(bytes: bytes, admit: admit) {
        case .start:
            performedInBurst = true
            return .perform(start(pending, sendNow: !moreBuffered))
        case .queue:
            queue.append(pending)
            return .queued(waitForBudget: flow.waitingForRoom)
        case .reject:
            phase = .closing
            return .answerAndClose(LocalAPIErrorBody(
                code: LocalAPIErrorBody.Code.tooManyRequests,
                message: "more than \(flow.maximumQueued) requests waiting; read the replies before sending more"))
        }
    }

    /// The next queued request the flow control lets start, if any (call until nil after any
    /// action that may have freed room).
    mutating func nextStart() -> LocalAPIStart? {
        guard phase != .closing, startable > 0, queueHead < queue.count else { return nil }
        let pending = queue[queueHead]
        queueHead += 1
        startable -= 1
        if queueHead == queue.count {
            queue.removeAll(keepingCapacity: queue.count < 64)
            queueHead = 0
            startable = 0
        }
        return start(pending, sendNow: false)
    }

    private mutating func start(_ pending: LocalAPIPendingRequest, sendNow: Bool) -> LocalAPIStart {
        var reservation: LocalAPIAttachReservation?
        if pending.operation == .attach, case .attach = pending.request { reservation = reserveAttachment(pending.requestID) }
        return LocalAPIStart(pending: pending, mayAnswerAtOnce: suspended == 0, sendNow: sendNow, attach: reservation)
    }

    /// The request just started is performed by a task (answered later, suspended meanwhile).
    mutating func performedByTask() { suspended += 1 }

    /// The reply (or error) to a request was written. `byTask`: it was performed by a task;
    /// `inRead`: it was answered while its read is handled (flushed when the read burst ends).
    /// Returns what to do next.
    mutating func requestAnswered(bytes: Int, byTask: Bool, inRead: Bool, admit: (Int) -> Bool) -> LocalAPIConnectionActions {
        if byTask { suspended = max(0, suspended - 1) }
        guard phase != .closing else { return LocalAPIConnectionActions() }
        var actions = progress(flow.requestFinished(bytes: bytes, admit: admit))
        actions.flush = framesWritten(inRead: inRead)
        return actions
    }

    /// The channel's writability changed.
    mutating func writabilityChanged(to writable: Bool, admit: (Int) -> Bool) -> LocalAPIConnectionActions {
        progress(flow.writabilityChanged(to: writable, admit: admit))
    }

    /// The uid's budget has room again (after `ReadAction.queued(waitForBudget: true)`).
    mutating func budgetFreed(admit: (Int) -> Bool) -> LocalAPIConnectionActions {
        guard phase != .closing else { return LocalAPIConnectionActions() }
        return progress(flow.roomFreed(admit: admit))
    }

    private mutating func progress(_ progress: LocalAPIFlowControl.Progress) -> LocalAPIConnectionActions {
        startable += progress.startQueued
        var actions = LocalAPIConnectionActions()
        actions.resumeReading = progress.resumeReading
        actions.reportShed = progress.reportShed
        actions.waitForBudget = flow.waitingForRoom
        return actions
    }

    /// An event is to be written: false when the flow control sheds it (and counts it for
    /// the next report).
    mutating func flowLetsEventThrough() -> Bool { flow.eventOffered() }

    /// Adds events shed before the connection to the next report; returns the count to report
    /// now, if the client keeps up.
    mutating func flowReportsShed(_ count: UInt64) -> UInt64? { flow.eventsShedElsewhere(count) }

    /// The pipeline wants to read.
    mutating func readRequested() -> LocalAPIFlowControl.ReadAction {
        let action = flow.readRequested()
        if case .hold = action { deadline?.readingPaused() }
        return action
    }

    /// The client shut its write side.
    mutating func inputClosed() {
        guard phase == .serving else { return }
        phase = .inputClosed
    }

    /// Whether to close now: the client shut its write side and every request it sent is
    /// answered. Moves to `closing` when it says yes.
    mutating func closeIfDrained() -> Bool {
        guard phase == .inputClosed, flow.inFlight == 0, queueHead == queue.count else { return false }
        phase = .closing
        return true
    }

    /// The connection is closing (an error, or the channel went inactive): nothing more runs.
    mutating func close() {
        phase = .closing
        queue.removeAll()
        queueHead = 0
        startable = 0
        holding.removeAll()
        shedInbox.forgetAll()
    }

    // MARK: - Flushing

    /// A reply or event frame was written: when to flush it. `inRead`: while a read is handled
    /// (the end of its burst flushes, after the burst's realtime datagrams left).
    mutating func framesWritten(inRead: Bool) -> LocalAPIConnectionActions.Flush {
        flushPending = true
        guard !inRead, !flushScheduled else { return .none }
        flushScheduled = true
        return .endOfTurn
    }

    /// The flush scheduled for the end of the loop turn runs: whether anything is left to flush.
    mutating func scheduledFlushRuns() -> Bool {
        flushScheduled = false
        return takeFlush()
    }

    /// Something asks to flush now (the router's end of a datagram burst): whether to.
    mutating func takeFlush() -> Bool {
        defer { flushPending = false }
        return flushPending
    }

    /// The read burst ended: whether the realtime datagrams its requests queued are to leave
    /// now, and whether to flush the replies and events it wrote.
    mutating func readBurstEnded() -> (sendRealtime: Bool, flush: Bool) {
        defer { performedInBurst = false }
        return (performedInBurst, takeFlush())
    }
}

/// A request read and not answered yet.
struct LocalAPIPendingRequest: Equatable {
    var request: LocalAPIRequest
    var operation: LocalAPIOperation
    var requestID: UInt32
    /// Its body's length (counted against the flow control's and the uid's limits).
    var bytes: Int
}

/// A request to perform now, and how.
struct LocalAPIStart: Equatable {
    var pending: LocalAPIPendingRequest
    /// The dispatcher may answer it within the call (no request of the connection is suspended).
    var mayAnswerAtOnce: Bool
    /// No other request frame follows in this read: the realtime datagrams of the read may
    /// leave with this request's at once.
    var sendNow: Bool
    /// For an attach: whether there is room for its attachment.
    var attach: LocalAPIAttachReservation?
}

/// What the connection found for an attach request.
enum LocalAPIAttachReservation: Sendable, Equatable {
    /// Room was reserved; its events are held until the reply is written.
    case reserved
    /// The connection has `LocalAPIConnectionState.maximumAttachments` already.
    case full
    /// An earlier attach on the connection used the same request id (events carry it, so the
    /// app could not tell the attachments' events apart).
    case requestIDInUse
}

/// What the handler does after an input, besides what the input's own result says.
struct LocalAPIConnectionActions: Equatable {
    /// When to flush written frames.
    enum Flush: Equatable {
        /// Not now (nothing written, or a flush already comes).
        case none
        /// At the end of the loop turn (frames written together share one write).
        case endOfTurn
    }

    /// Issue the held read.
    var resumeReading = false
    /// Write an `events.dropped` event with this count.
    var reportShed: UInt64?
    /// Wait for the uid's budget to free room.
    var waitForBudget = false
    /// When to flush.
    var flush = Flush.none
}
