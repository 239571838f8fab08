import MeshLocalAPI
import Testing
@testable import MeshDaemon

/// The deadlines that close a local connection holding a place without using it, stepped with
/// a clock in nanoseconds: no first request in time, or a frame left half-sent; never an idle
/// connection that has made a request (an attached app waiting for events).
@Suite("local API connection deadlines")
struct LocalAPIConnectionDeadlineTests {
    static let second: UInt64 = 1_000_000_000
    static let limits = LocalAPIConnectionDeadline.Limits(firstRequest: 30 * second, partialFrame: 30 * second)

    @Test func aConnectionThatSendsNothingExpiresAtItsFirstRequestDeadline() {
        let deadline = LocalAPIConnectionDeadline(limits: Self.limits, acceptedAt: 5 * Self.second)
        #expect(deadline.next == 35 * Self.second)
        #expect(deadline.expired(now: 34 * Self.second) == nil)
        #expect(deadline.expired(now: 35 * Self.second) == .noFirstRequest)
    }

    /// An app that attached and then waits for hours is never closed.
    @Test func aConnectionThatMadeARequestHasNoDeadlineBetweenFrames() {
        var deadline = LocalAPIConnectionDeadline(limits: Self.limits, acceptedAt: 0)
        deadline.requestRead()
        deadline.readEnded(partialFrame: false, now: Self.second)
        #expect(deadline.next == nil)
        #expect(deadline.expired(now: 10 * 3600 * Self.second) == nil, "idle for ten hours")
    }

    /// The deadline of a frame runs from its first bytes; more bytes of the same frame do not
    /// push it back (a client dribbling one byte at a time still has to finish in time).
    @Test func aHalfSentFrameExpiresFromItsFirstBytes() {
        var deadline = LocalAPIConnectionDeadline(limits: Self.limits, acceptedAt: 0)
        deadline.requestRead()
        deadline.readEnded(partialFrame: true, now: 100 * Self.second)
        #expect(deadline.next == 130 * Self.second)
        deadline.readEnded(partialFrame: true, now: 120 * Self.second)
        #expect(deadline.next == 130 * Self.second, "a dribble does not extend it")
        #expect(deadline.expired(now: 129 * Self.second) == nil)
        #expect(deadline.expired(now: 130 * Self.second) == .partialFrame)

        deadline.readEnded(partialFrame: false, now: 129 * Self.second)
        #expect(deadline.next == nil, "the frame completed")
        #expect(deadline.expired(now: 1000 * Self.second) == nil)
    }

    /// Bytes the daemon does not ask for (it holds reading for a client that does not read its
    /// replies) are not the client's delay: the clock stops, and restarts when reading resumes.
    @Test func theHalfSentClockStopsWhileTheDaemonHoldsReading() {
        var deadline = LocalAPIConnectionDeadline(limits: Self.limits, acceptedAt: 0)
        deadline.requestRead()
        deadline.readEnded(partialFrame: true, now: 10 * Self.second)
        deadline.readingPaused()
        #expect(deadline.next == nil)
        #expect(deadline.expired(now: 500 * Self.second) == nil)
        deadline.readingResumed(now: 500 * Self.second)
        #expect(deadline.next == 530 * Self.second)
        #expect(deadline.expired(now: 530 * Self.second) == .partialFrame)
    }

    /// Through the connection's state: the error to answer, and nothing after closing.
    @Test func theStateAnswersTimedOutOnceAndThenIsClosing() {
        var state = LocalAPIConnectionState(flow: LocalAPIFlowControl(maximumInFlight: 4, maximumQueued: 8),
                                            deadline: LocalAPIConnectionDeadline(limits: Self.limits, acceptedAt: 0))
        #expect(state.deadlinePassed(now: 29 * Self.second) == nil)
        let passed = state.deadlinePassed(now: 30 * Self.second)
        #expect(passed?.expiry == .noFirstRequest)
        #expect(passed?.error.code == "timed-out")
        #expect(passed?.error.message == "no request arrived within 30 s of connecting; send a request right after connecting")
        #expect(state.phase == .closing)
        #expect(state.nextDeadline == nil)
        #expect(state.deadlinePassed(now: 60 * Self.second) == nil)
    }

    @Test func aRequestReadThroughTheStateEndsTheFirstRequestDeadline() {
        var state = LocalAPIConnectionState(flow: LocalAPIFlowControl(maximumInFlight: 4, maximumQueued: 8),
                                            deadline: LocalAPIConnectionDeadline(limits: Self.limits, acceptedAt: 0))
        _ = state.requestRead(.success(.status), operation: .status, requestID: 1, bytes: 0, moreBuffered: false, admit: { _ in true })
        #expect(state.nextDeadline == nil)
        #expect(state.deadlinePassed(now: 3600 * Self.second) == nil)
    }
}
