import MeshLocalAPI
import NIOCore

extension LocalAPIConnectionHandler {
    /// The loop's monotonic time, nanoseconds (what the deadlines count in).
    static func now() -> UInt64 { NIODeadline.now().uptimeNanoseconds }

    /// A read burst ended; `partialFrame`: the decoder holds part of a frame.
    func noteReadEnded(partialFrame: Bool) {
        guard let deadline = state.deadline else { return }
        if partialFrame {
            state.readEnded(partialFrame: true, now: Self.now())
            armDeadline()
        } else if deadline.partialFrameBuffered {
            state.readEnded(partialFrame: false, now: 0)
        }
    }

    /// The slow-reader policy lets the handler read again.
    func noteReadingResumed() {
        guard state.deadline?.readingHeld == true else { return }
        state.readingResumed(now: Self.now())
        armDeadline()
    }

    /// Schedules the timer for the state's next deadline unless one fires by then already. A
    /// deadline that goes away leaves its timer, which finds nothing when it fires (the common
    /// case, a first request read at once, costs no cancel).
    func armDeadline() {
        guard let next = state.nextDeadline, let context else { return }
        if let armed = deadlineTimer {
            guard next < armed.at else { return }
            armed.task.cancel()
        }
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        let task = context.eventLoop.scheduleTask(deadline: .uptimeNanoseconds(next)) {
            handler.value.deadlineFired()
        }
        deadlineTimer = (task, next)
    }

    private func deadlineFired() {
        deadlineTimer = nil
        guard let (expiry, error) = state.deadlinePassed(now: Self.now()).map({ ($0.expiry, $0.error) }) else {
            armDeadline()
            return
        }
        counters.add(.connectionsTimedOut)
        let reason = expiry == .noFirstRequest ? "no-first-request" : "partial-frame"
        if let warnings {
            warnings.warn(.timedOut, metadata: ["api.deadline": "\(reason)", "client.uid": "\(budgetUID)"])
        } else {
            logger.debug("local API connection timed out; closing", metadata: ["api.deadline": "\(reason)"])
        }
        answerAndClose(error, operation: .unspecified, requestID: 0)
    }
}
