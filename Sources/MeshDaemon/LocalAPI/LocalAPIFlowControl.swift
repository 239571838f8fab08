/// The slow-reader policy of one local API connection, as a value with no I/O.
///
/// - At most `maximumInFlight` requests of a connection run at once, whose bodies together take
///   at most `maximumInFlightBytes` (a larger request runs when it is the only one). Further
///   requests wait in a per-connection queue, in arrival order. A reliable send runs until its
///   commit, so the count is what lets one connection's sends share a group commit.
/// - Reading pauses (the daemon stops asking the kernel for that client's bytes) while requests
///   are queued or running at the limit, or while the client's outbound buffer is above the
///   high watermark (the channel is not writable). No new request starts while the channel is
///   not writable. A client that never reads its replies therefore stalls only itself, and the
///   memory it can pin is bounded by one read's worth of requests plus the watermark.
/// - A queue longer than `maximumQueued` (which one read cannot produce) closes the connection
///   with `too-many-requests`.
/// - A request also needs room in a budget shared with other connections (the uid's bytes in
///   flight, `LocalAPIUIDBudget`), asked through the `admit` closure the caller passes. When it
///   says no, the request waits in the queue (reading pauses) and `waitingForRoom` is set until
///   `roomFreed` is called.
/// - Events are shed while the channel is not writable; the number shed is reported to
///   the client in an `events.dropped` event once it catches up.
public struct LocalAPIFlowControl: Sendable, Equatable {
    /// Requests running at once per connection.
    public let maximumInFlight: Int
    /// Requests waiting per connection beyond which the connection is closed.
    public let maximumQueued: Int
    /// Body bytes of the requests running at once (one request always may run).
    public let maximumInFlightBytes: Int
    /// Requests running now.
    public private(set) var inFlight = 0
    /// Requests read and waiting to start.
    public private(set) var queued = 0
    /// Body bytes of the requests running now.
    public private(set) var inFlightBytes = 0
    /// Body bytes of each queued request, oldest first (from `queuedHead`).
    private var queuedBytes: [Int] = []
    private var queuedHead = 0
    /// Whether the outbound buffer is below the high watermark.
    public private(set) var writable = true
    /// Whether a read was held back and must be issued on resume.
    public private(set) var readHeld = false
    /// Events shed since the last report.
    public private(set) var shedSinceReport: UInt64 = 0
    /// The next request fits this connection's limits but not the shared budget: wait for
    /// `roomFreed`.
    public private(set) var waitingForRoom = false

    /// Creates the policy with its limits.
    public init(maximumInFlight: Int, maximumQueued: Int, maximumInFlightBytes: Int = 8 << 20) {
        self.maximumInFlight = max(1, maximumInFlight)
        self.maximumQueued = max(0, maximumQueued)
        self.maximumInFlightBytes = max(0, maximumInFlightBytes)
    }

    /// Whether reading is paused now.
    public var isPaused: Bool {
        inFlight >= maximumInFlight || (inFlight > 0 && inFlightBytes >= maximumInFlightBytes) || queued > 0 || !writable
    }

    private func canStart(_ bytes: Int) -> Bool {
        inFlight < maximumInFlight && writable && (inFlight == 0 || inFlightBytes + bytes <= maximumInFlightBytes)
    }

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

    /// What to do with a request just read.
    public enum Arrival: Sendable, Equatable {
        /// Run it now.
        case start
        /// Append it to the connection's queue.
        case queue
        /// Close the connection: the queue is full.
        case reject
    }

    /// A request with a body of `bytes` was read. `admit` asks the shared budget for its bytes
    /// (and takes them when it says yes); it is called only when the request could start.
    public mutating func requestArrived(bytes: Int = 0, admit: (Int) -> Bool = { _ in true }) -> Arrival {
        let bytes = max(0, bytes)
        if queued == 0, canStart(bytes) {
            if admit(bytes) {
                inFlight += 1
                inFlightBytes += bytes
                return .start
            }
            waitingForRoom = true
        }
        guard queued < maximumQueued else { return .reject }
        queued += 1
        queuedBytes.append(bytes)
        return .queue
    }

    /// What to do after a request finished or the channel became writable.
    public struct Progress: Sendable, Equatable {
        /// Start this many queued requests, oldest first.
        public var startQueued: Int
        /// Issue the held read.
        public var resumeReading: Bool
        /// Send an `events.dropped` event with this count.
        public var reportShed: UInt64?

        /// Creates a progress value.
        public init(startQueued: Int, resumeReading: Bool, reportShed: UInt64?) {
            self.startQueued = startQueued
            self.resumeReading = resumeReading
            self.reportShed = reportShed
        }
    }

    /// A request with a body of `bytes` was answered (the caller gives its bytes back to the
    /// shared budget).
    public mutating func requestFinished(bytes: Int = 0, admit: (Int) -> Bool = { _ in true }) -> Progress {
        inFlight = max(0, inFlight - 1)
        inFlightBytes = inFlight == 0 ? 0 : max(0, inFlightBytes - max(0, bytes))
        return progress(reportShed: nil, admit: admit)
    }

    /// The channel's writability changed.
    public mutating func writabilityChanged(to writable: Bool, admit: (Int) -> Bool = { _ in true }) -> Progress {
        self.writable = writable
        guard writable else { return Progress(startQueued: 0, resumeReading: false, reportShed: nil) }
        var report: UInt64? = nil
        if shedSinceReport > 0 {
            report = shedSinceReport
            shedSinceReport = 0
        }
        return progress(reportShed: report, admit: admit)
    }

    /// The shared budget has room again (after `waitingForRoom`): start what fits now.
    public mutating func roomFreed(admit: (Int) -> Bool) -> Progress {
        waitingForRoom = false
        return progress(reportShed: nil, admit: admit)
    }

    /// `count` events for this connection were shed before they reached it (by the router, or
    /// by an attach's sink before its reply was out). Returns the count to report in an
    /// `events.dropped` event now (with what this connection shed and has not reported yet),
    /// or nil while the channel is not writable (reported when it is again).
    public mutating func eventsShedElsewhere(_ count: UInt64) -> UInt64? {
        shedSinceReport &+= count
        guard writable, shedSinceReport > 0 else { return nil }
        defer { shedSinceReport = 0 }
        return shedSinceReport
    }

    /// An event is to be sent; returns false when it must be shed (and counts it).
    public mutating func eventOffered() -> Bool {
        guard writable else {
            shedSinceReport += 1
            return false
        }
        return true
    }

    private mutating func progress(reportShed: UInt64?, admit: (Int) -> Bool) -> Progress {
        var start = 0
        waitingForRoom = false
        while queued > 0, canStart(queuedBytes[queuedHead]) {
            guard admit(queuedBytes[queuedHead]) else {
                waitingForRoom = true
                break
            }
            queued -= 1
            inFlight += 1
            inFlightBytes += queuedBytes[queuedHead]
            queuedHead += 1
            start += 1
        }
        if queued == 0 {
            queuedBytes.removeAll(keepingCapacity: queuedBytes.count < 64)
            queuedHead = 0
        }
        var resume = false
        if readHeld, !isPaused {
            readHeld = false
            resume = true
        }
        return Progress(startQueued: start, resumeReading: resume, reportShed: reportShed)
    }
}
