/// The slow-reader policy of one local API connection, as a value with no I/O.
///
/// - Reading pauses (the daemon stops asking the kernel for that client's bytes) while the
///   client has `softInFlightLimit` requests in flight or its outbound buffer is above the high
///   watermark (the channel is not writable). A client that never reads its replies therefore
///   stalls only itself, and the memory it can pin is bounded.
/// - Requests already read beyond `hardInFlightLimit` close the connection (`too-many-requests`).
/// - Events (issue 5) are shed while the channel is not writable; the number shed is reported to
///   the client in an `events.dropped` event once it catches up.
///
/// Every transition is counted by the caller through the returned actions.
public struct LocalAPIFlowControl: Sendable, Equatable {
    /// At this many requests in flight, reading pauses.
    public let softInFlightLimit: Int
    /// Beyond this many, the connection is closed.
    public let hardInFlightLimit: Int
    /// Requests read and not yet answered.
    public private(set) var inFlight = 0
    /// Whether the outbound buffer is below the high watermark.
    public private(set) var writable = true
    /// Whether a read was held back and must be issued on resume.
    public private(set) var readHeld = false
    /// Events shed since the last report.
    public private(set) var shedSinceReport: UInt64 = 0

    /// Creates the policy with its limits.
    public init(softInFlightLimit: Int, hardInFlightLimit: Int) {
        self.softInFlightLimit = softInFlightLimit
        self.hardInFlightLimit = max(softInFlightLimit, hardInFlightLimit)
    }

    /// Whether reading is paused now.
    public var isPaused: Bool { inFlight >= softInFlightLimit || !writable }

    /// What to do with a read the pipeline asks for.
    public enum ReadAction: Sendable, Equatable {
        /// Pass it on.
        case forward
        /// Hold it; `newlyPaused` is true for the first held read of a pause (count it).
        case hold(newlyPaused: Bool)
    }

    /// The pipeline wants to read.
    public mutating func readRequested() -> ReadAction {
        guard isPaused else { return .forward }
        let first = !readHeld
        readHeld = true
        return .hold(newlyPaused: first)
    }

    /// A request was read; returns false when it exceeds the hard limit (close the connection).
    public mutating func requestStarted() -> Bool {
        inFlight += 1
        return inFlight <= hardInFlightLimit
    }

    /// A request was answered; returns true when a held read must now be issued.
    public mutating func requestFinished() -> Bool {
        inFlight = max(0, inFlight - 1)
        return resumeIfPossible()
    }

    /// What to do after the channel's writability changed.
    public struct WritabilityAction: Sendable, Equatable {
        /// Issue the held read.
        public var resumeReading: Bool
        /// Send an `events.dropped` event with this count.
        public var reportShed: UInt64?
    }

    /// The channel's writability changed.
    public mutating func writabilityChanged(to writable: Bool) -> WritabilityAction {
        self.writable = writable
        guard writable else { return WritabilityAction(resumeReading: false, reportShed: nil) }
        var report: UInt64? = nil
        if shedSinceReport > 0 {
            report = shedSinceReport
            shedSinceReport = 0
        }
        return WritabilityAction(resumeReading: resumeIfPossible(), reportShed: report)
    }

    /// An event is to be sent; returns false when it must be shed (and counts it).
    public mutating func eventOffered() -> Bool {
        guard writable else {
            shedSinceReport += 1
            return false
        }
        return true
    }

    private mutating func resumeIfPossible() -> Bool {
        guard readHeld, !isPaused else { return false }
        readHeld = false
        return true
    }
}
