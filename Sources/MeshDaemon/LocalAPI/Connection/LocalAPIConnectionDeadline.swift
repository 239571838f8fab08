/// When a local API connection that holds a place without using it is closed, as a value with
/// no I/O, driven with the caller's monotonic time (`now`, nanoseconds).
///
/// Two deadlines, neither of which a working client meets:
/// - **First request**: a connection must deliver its first whole request frame within
///   `firstRequest` of being accepted. One that never does (a client that connects and sends
///   nothing, or dribbles its first frame) is closed.
/// - **Half-sent frame**: once the connection has read part of a frame, the rest must arrive
///   within `partialFrame`. The clock does not run while the daemon itself holds reading (the
///   slow-reader policy): bytes the daemon does not ask for are not the client's delay.
///
/// A connection that delivered a request and then sends nothing — an app attached for hours,
/// waiting for events, or a `pair.wait` — is never closed by either: between frames there is no
/// deadline at all.
struct LocalAPIConnectionDeadline: Sendable, Equatable {
    /// The two deadlines, in nanoseconds.
    struct Limits: Sendable, Equatable {
        /// From accept to the first whole request frame.
        var firstRequest: UInt64
        /// From the first byte of a frame read to its last (reading held by the daemon pauses it).
        var partialFrame: UInt64

        /// 30 s each: far beyond what a local client needs (meshctl's first request leaves
        /// within milliseconds; a 1 MiB frame crosses a Unix socket in about a millisecond).
        static let standard = Limits(firstRequest: 30_000_000_000, partialFrame: 30_000_000_000)
    }

    /// Which deadline passed.
    enum Expiry: Sendable, Equatable {
        /// No whole request arrived within `Limits.firstRequest` of the accept.
        case noFirstRequest
        /// A frame was left half-sent for `Limits.partialFrame`.
        case partialFrame
    }

    /// The deadlines.
    let limits: Limits
    /// When the first request must have arrived (nil once one did).
    private(set) var firstRequestBy: UInt64?
    /// When the frame being received must be complete (nil: no partial frame, or reading held).
    private(set) var partialFrameBy: UInt64?
    /// Bytes of an unfinished frame are buffered.
    private(set) var partialFrameBuffered = false
    /// The daemon holds reading (the partial-frame clock stops).
    private(set) var readingHeld = false

    /// The deadlines of a connection accepted at `now`.
    init(limits: Limits, acceptedAt now: UInt64) {
        self.limits = limits
        firstRequestBy = now &+ limits.firstRequest
    }

    /// The earliest deadline still running, if any (when to look again).
    var next: UInt64? {
        switch (firstRequestBy, partialFrameBy) {
        case let (first?, partial?): min(first, partial)
        case let (first?, nil): first
        case let (nil, partial?): partial
        case (nil, nil): nil
        }
    }

    /// A whole request frame was read.
    mutating func requestRead() { firstRequestBy = nil }

    /// A read burst ended; `partialFrame`: bytes of an unfinished frame are left buffered.
    /// A frame still unfinished keeps the deadline it got when it started.
    mutating func readEnded(partialFrame: Bool, now: UInt64) {
        partialFrameBuffered = partialFrame
        if !partialFrame {
            partialFrameBy = nil
        } else if partialFrameBy == nil, !readingHeld {
            partialFrameBy = now &+ limits.partialFrame
        }
    }

    /// The daemon stopped reading from the client (its partial-frame clock stops).
    mutating func readingPaused() {
        readingHeld = true
        partialFrameBy = nil
    }

    /// The daemon reads again at `now`: a frame still unfinished gets a fresh deadline.
    mutating func readingResumed(now: UInt64) {
        guard readingHeld else { return }
        readingHeld = false
        if partialFrameBuffered { partialFrameBy = now &+ limits.partialFrame }
    }

    /// Which deadline has passed at `now`, if any (the connection is then to be closed).
    func expired(now: UInt64) -> Expiry? {
        if let first = firstRequestBy, now >= first { return .noFirstRequest }
        if let partial = partialFrameBy, now >= partial { return .partialFrame }
        return nil
    }
}
