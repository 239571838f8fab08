import MeshLocalAPI
import Testing
@testable import MeshDaemon

/// The connection's decisions, driven without a socket: what runs when, when the connection
/// reads, flushes and closes, and what becomes of each event.
@Suite("Local API connection state")
struct LocalAPIConnectionStateTests {
    private static func state(inFlight: Int = 2, queued: Int = 4) -> LocalAPIConnectionState {
        LocalAPIConnectionState(flow: LocalAPIFlowControl(maximumInFlight: inFlight, maximumQueued: queued))
    }

    /// Reads a `status` request with id `id`.
    private static func read(_ state: inout LocalAPIConnectionState, id: UInt32, request: LocalAPIRequest = .status,
                             bytes: Int = 0, moreBuffered: Bool = false,
                             admit: (Int) -> Bool = { _ in true }) -> LocalAPIConnectionState.ReadAction {
        let operation: LocalAPIOperation = if case .attach = request { .attach } else { .status }
        return state.requestRead(.success(request), operation: operation, requestID: id, bytes: bytes,
                                 moreBuffered: moreBuffered, admit: admit)
    }

    private static func started(_ action: LocalAPIConnectionState.ReadAction) -> LocalAPIStart? {
        guard case .perform(let start) = action else { return nil }
        return start
    }

    private static let attach = LocalAPIRequest.attach(features: ["f"], sessionID: nil, app: nil)

    @Test func aRequestIsAnsweredAtOnceOnlyWhileNoneIsSuspendedInATask() throws {
        var state = Self.state(inFlight: 4)
        let first = try #require(Self.started(Self.read(&state, id: 1, moreBuffered: true)))
        #expect(first.mayAnswerAtOnce)
        #expect(!first.sendNow, "another frame follows in this read")
        state.performedByTask()
        let second = try #require(Self.started(Self.read(&state, id: 2)))
        #expect(!second.mayAnswerAtOnce, "request 1 is suspended: 2 must not overtake it")
        #expect(second.sendNow)
        _ = state.requestAnswered(bytes: 0, byTask: true, inRead: false) { _ in true }
        let third = try #require(Self.started(Self.read(&state, id: 3)))
        #expect(third.mayAnswerAtOnce)
    }

    @Test func requestsBeyondTheLimitWaitAndStartInArrivalOrder() throws {
        var state = Self.state(inFlight: 1, queued: 2)
        #expect(Self.started(Self.read(&state, id: 1)) != nil)
        let r1 = state.readRequested()
        #expect(r1 == .hold(newlyPaused: true))
        #expect(Self.read(&state, id: 2) == .queued(waitForBudget: false))
        #expect(Self.read(&state, id: 3) == .queued(waitForBudget: false))
        let r2 = state.nextStart()
        #expect(r2 == nil, "nothing may start while request 1 runs")

        var actions = state.requestAnswered(bytes: 0, byTask: false, inRead: false) { _ in true }
        #expect(!actions.resumeReading, "request 3 still waits")
        let r3 = state.nextStart()
        let next = try #require(r3)
        #expect(next.pending.requestID == 2)
        #expect(!next.sendNow)
        let r4 = state.nextStart()
        #expect(r4 == nil)

        actions = state.requestAnswered(bytes: 0, byTask: false, inRead: false) { _ in true }
        let r5 = state.nextStart()
        #expect(try #require(r5).pending.requestID == 3)
        actions = state.requestAnswered(bytes: 0, byTask: false, inRead: false) { _ in true }
        #expect(actions.resumeReading, "the queue is empty: the held read goes out")
    }

    @Test func aFullQueueClosesTheConnectionWithTooManyRequests() throws {
        var state = Self.state(inFlight: 1, queued: 1)
        _ = Self.read(&state, id: 1)
        _ = Self.read(&state, id: 2)
        guard case .answerAndClose(let error) = Self.read(&state, id: 3) else {
            Issue.record("a third request must close the connection")
            return
        }
        #expect(error.code == LocalAPIErrorBody.Code.tooManyRequests)
        #expect(state.phase == .closing)
        #expect(Self.read(&state, id: 4) == .ignore)
        let r6 = state.nextStart()
        #expect(r6 == nil)
    }

    @Test func aRefusedRequestIsAnsweredAndOnlyMalformedInputCloses() {
        var state = Self.state()
        let unknown = LocalAPIRequest.Rejection(body: LocalAPIErrorBody(code: LocalAPIErrorBody.Code.unknownOperation, message: "x"),
                                                closesConnection: false)
        let r7 = state.requestRead(.failure(unknown), operation: .status, requestID: 1, bytes: 0, moreBuffered: false) { _ in true }
        #expect(r7
                == .answer(unknown.body))
        #expect(state.phase == .serving)
        let malformed = LocalAPIRequest.Rejection(body: LocalAPIErrorBody(code: LocalAPIErrorBody.Code.badRequest, message: "y"),
                                                  closesConnection: true)
        let r8 = state.requestRead(.failure(malformed), operation: .status, requestID: 2, bytes: 0, moreBuffered: false) { _ in true }
        #expect(r8
                == .answerAndClose(malformed.body))
        #expect(state.phase == .closing)
    }

    @Test func aClientThatShutItsWriteSideIsClosedOnceEverythingIsAnswered() {
        var state = Self.state()
        _ = Self.read(&state, id: 1)
        state.inputClosed()
        let r9 = state.closeIfDrained()
        #expect(!r9, "request 1 is not answered yet")
        _ = state.requestAnswered(bytes: 0, byTask: false, inRead: false) { _ in true }
        let r10 = state.closeIfDrained()
        #expect(r10)
        #expect(state.phase == .closing)
    }

    @Test func aRequestTheUIDBudgetCannotTakeWaitsUntilRoomIsFreed() throws {
        var state = Self.state()
        #expect(Self.read(&state, id: 1, bytes: 100) { _ in false } == .queued(waitForBudget: true))
        let r11 = state.nextStart()
        #expect(r11 == nil)
        let actions = state.budgetFreed { _ in true }
        #expect(!actions.waitForBudget)
        let r12 = state.nextStart()
        #expect(try #require(r12).pending.requestID == 1)
    }

    @Test func repliesWrittenDuringAReadAreFlushedWhenTheBurstEndsAndOthersAtTheEndOfTheTurn() {
        var state = Self.state()
        _ = Self.read(&state, id: 1)
        let r13 = state.requestAnswered(bytes: 0, byTask: false, inRead: true) { _ in true }
        #expect(r13.flush == .none)
        let burst = state.readBurstEnded()
        #expect(burst.sendRealtime, "a request of the burst was performed: its datagrams leave now")
        #expect(burst.flush)
        let r14 = state.readBurstEnded()
        #expect(r14 == (false, false))

        let r15 = state.framesWritten(inRead: false)
        #expect(r15 == .endOfTurn)
        let r16 = state.framesWritten(inRead: false)
        #expect(r16 == .none, "one flush per turn")
        let r17 = state.scheduledFlushRuns()
        #expect(r17)
        let r18 = state.scheduledFlushRuns()
        #expect(!r18)
    }

    // MARK: - Attachments and events

    @Test func anAttachNeedsAnUnusedRequestIDAndRoom() throws {
        var state = Self.state(inFlight: 300)
        let first = try #require(Self.started(Self.read(&state, id: 7, request: Self.attach)))
        #expect(first.attach == .reserved)
        #expect(Self.started(Self.read(&state, id: 7, request: Self.attach))?.attach == .requestIDInUse)
        #expect(Self.started(Self.read(&state, id: 8))?.attach == nil, "not an attach")

        // A failed attach gives its room and id back.
        _ = state.attachAnswered(requestID: 7, reservation: .reserved, succeeded: false)
        #expect(Self.started(Self.read(&state, id: 7, request: Self.attach))?.attach == .reserved)
        for id in 100..<UInt32(100 + LocalAPIConnectionState.maximumAttachments - 1) {
            #expect(Self.started(Self.read(&state, id: id, request: Self.attach))?.attach == .reserved)
        }
        #expect(Self.started(Self.read(&state, id: 9, request: Self.attach))?.attach == .full)
    }

    private static func envelope(_ inboxID: Int64, _ payload: UInt8 = 0) -> DeliveryEvent {
        .envelope(from: "peer", inboxID: inboxID, redelivery: false, mode: inboxID == 0 ? 1 : 2, encoded: [payload])
    }

    @Test func eventsBeforeTheAttachReplyAreHeldAndFollowItInOrder() throws {
        var state = Self.state()
        _ = Self.read(&state, id: 5, request: Self.attach)
        for index in 0..<LocalAPIConnectionState.heldLimit + 2 {
            let r19 = state.eventArrived(Self.envelope(Int64(index + 1)), requestID: 5)
            #expect(r19 == .held)
        }
        let r20 = state.eventArrived(Self.envelope(1), requestID: 6)
        #expect(r20 == .write, "another attachment is not held")
        let r21 = state.attachAnswered(requestID: 5, reservation: .reserved, succeeded: true)
        let held = try #require(r21)
        #expect(held.events.count == LocalAPIConnectionState.heldLimit)
        #expect(held.events.first == Self.envelope(1))
        #expect(held.shed == 2)
        #expect(held.shedInbox.map(\.inboxID) == [Int64(LocalAPIConnectionState.heldLimit + 1),
                                                  Int64(LocalAPIConnectionState.heldLimit + 2)])
        let r22 = state.eventArrived(Self.envelope(1), requestID: 5)
        #expect(r22 == .write, "open now")

        // A failed attach's held events are dropped with it.
        _ = Self.read(&state, id: 9, request: Self.attach)
        let r23 = state.eventArrived(Self.envelope(1), requestID: 9)
        #expect(r23 == .held)
        let r24 = state.attachAnswered(requestID: 9, reservation: .reserved, succeeded: false)
        #expect(r24 == nil)
    }

    @Test func eventsAreShedWhileTheClientLagsAndLaterInboxItemsWaitInOrder() {
        var state = Self.state()
        _ = state.writabilityChanged(to: false) { _ in true }
        let r25 = state.eventArrived(Self.envelope(10), requestID: 1)
        #expect(r25 == .shed)
        let r26 = state.eventArrived(Self.envelope(0), requestID: 1)
        #expect(r26 == .shed, "a realtime envelope is shed too")
        let actions = state.writabilityChanged(to: true) { _ in true }
        #expect(actions.reportShed == 2)

        // Item 10 is still to be offered again: item 11 of the same attachment waits behind it;
        // realtime envelopes and other attachments' items pass.
        let r27 = state.eventArrived(Self.envelope(11), requestID: 1)
        #expect(r27 == .waitsInOrder)
        let r28 = state.eventArrived(Self.envelope(0), requestID: 1)
        #expect(r28 == .write)
        let r29 = state.eventArrived(Self.envelope(12), requestID: 2)
        #expect(r29 == .write)

        let round = state.takeShedInboxRound(room: 64) { (requestID: UInt32) -> UInt32? in requestID }
        #expect(round?.count == 1)
        #expect(round?.first?.items.map(\.inboxID) == [10, 11])
        let r30 = state.takeShedInboxRound(room: 64) { $0 }
        #expect(r30 == nil, "one round at a time")
        // The round's items come back in their order; then the round is handed.
        let r31 = state.eventArrived(Self.envelope(10), requestID: 1)
        #expect(r31 == .write)
        let r32 = state.eventArrived(Self.envelope(11), requestID: 1)
        #expect(r32 == .write)
        state.shedInboxRoundHanded()
        let r33 = state.eventArrived(Self.envelope(13), requestID: 1)
        #expect(r33 == .write)
    }

    @Test func eventsShedElsewhereAreReportedAtOnceOrWhenTheClientCatchesUp() {
        var state = Self.state()
        let r34 = state.eventsShedElsewhere(3, requestID: 1, inboxItems: [])
        #expect(r34 == 3)
        _ = state.writabilityChanged(to: false) { _ in true }
        let r35 = state.eventsShedElsewhere(4, requestID: 1, inboxItems: [ShedInboxItem(inboxID: 9, redelivery: true)])
        #expect(r35 == nil)
        let r36 = state.writabilityChanged(to: true) { _ in true }
        #expect(r36.reportShed == 4)
        let r37 = state.eventArrived(Self.envelope(20), requestID: 1)
        #expect(r37 == .waitsInOrder, "item 9 comes first")
    }

    @Test func aClosingConnectionDropsEventsAndPerformsNothing() {
        var state = Self.state()
        state.close()
        let r38 = state.eventArrived(Self.envelope(1), requestID: 1)
        #expect(r38 == .dropped)
        #expect(Self.read(&state, id: 1) == .ignore)
        let r39 = state.eventsShedElsewhere(1, requestID: 1, inboxItems: [])
        #expect(r39 == nil)
    }
}
