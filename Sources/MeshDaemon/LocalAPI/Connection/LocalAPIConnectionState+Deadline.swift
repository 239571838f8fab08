import MeshLocalAPI

extension LocalAPIConnectionState {
    /// The next moment a deadline may pass (when to check again); nil when none runs or the
    /// connection is closing.
    var nextDeadline: UInt64? {
        guard phase != .closing else { return nil }
        return deadline?.next
    }

    /// A read burst ended at `now`; `partialFrame`: the decoder holds part of a frame.
    mutating func readEnded(partialFrame: Bool, now: UInt64) {
        deadline?.readEnded(partialFrame: partialFrame, now: now)
    }

    /// The daemon reads from the client again at `now` (after the slow-reader policy held it).
    mutating func readingResumed(now: UInt64) {
        deadline?.readingResumed(now: now)
    }

    /// A deadline timer fired at `now`: the error to answer before closing when one has passed
    /// (the state is then `closing`), nil when the connection lives on.
    mutating func deadlinePassed(now: UInt64) -> (expiry: LocalAPIConnectionDeadline.Expiry, error: LocalAPIErrorBody)? {
        guard phase != .closing, let deadline, let expiry = deadline.expired(now: now) else { return nil }
        close()
        let seconds = Double(expiry == .noFirstRequest ? deadline.limits.firstRequest : deadline.limits.partialFrame) / 1e9
        let message = switch expiry {
        case .noFirstRequest:
            "no request arrived within \(Self.format(seconds)) s of connecting; send a request right after connecting"
        case .partialFrame:
            "a frame was left half-sent for \(Self.format(seconds)) s; send each frame whole"
        }
        return (expiry, LocalAPIErrorBody(code: LocalAPIErrorBody.Code.timedOut, message: message))
    }

    private static func format(_ seconds: Double) -> String {
        seconds == seconds.rounded() ? String(Int(seconds)) : String(seconds)
    }
}
