import Foundation

/// A session timer as anchor + accumulator: both devices compute elapsed time from the same
/// formula and no per-second ticks cross the wire.
///
/// `elapsed(at:) = accumulatedElapsedBeforeAnchor + (end − startedAt)`, where `end` is `at`
/// while running and `pauseStartedAt` while paused. Resuming rebases the anchor (`startedAt`
/// becomes the resume instant) and the accumulator absorbs the active time before it, so pause
/// and resume never drift and there is no reconstructed "total paused time".
///
/// **Unit.** All arithmetic is exact integer arithmetic in **microseconds**: every instant is
/// converted with `round(timeIntervalSinceReferenceDate × 1 000 000)` (half away from zero) and
/// every duration with `round(seconds × 1 000 000)`, then clamped to ±2^61 µs (about ±73 000
/// years) so nothing overflows. A `Date` is a `Double` of seconds since 2001 whose resolution is
/// about 0.12 µs today (finer than 0.5 µs until the year 2137), so instants given in whole
/// microseconds convert without error and `elapsed` equals the exact sum of active intervals.
/// ``elapsedMicroseconds(at:)`` returns that integer; ``elapsed(at:)`` is it divided by 10^6.
///
/// Countdowns use `expectedEndAt` (shifted forward by each pause on resume); stepped sessions
/// use `stepStartedAt` (shifted the same way). Non-finite inputs count as the reference date.
public struct SessionTimerAnchor: Sendable, Hashable, Codable {
    /// The anchor instant: the start, or the latest resume.
    public var startedAt: Date
    /// Active time before `startedAt`, in seconds.
    public var accumulatedElapsedBeforeAnchor: TimeInterval
    /// When the current pause began; meaningful while `isPaused`.
    public var pauseStartedAt: Date?
    /// Whether the timer is paused.
    public var isPaused: Bool
    /// For a countdown: when it ends if not paused again; `nil` for an open-ended timer.
    public var expectedEndAt: Date?
    /// For a stepped session: when the current step began (pause-adjusted); `nil` without steps.
    public var stepStartedAt: Date?

    /// Creates an anchor; the parameters are the seed's fields in the seed's order.
    public init(
        startedAt: Date,
        accumulatedElapsedBeforeAnchor: TimeInterval = 0,
        pauseStartedAt: Date? = nil,
        isPaused: Bool = false,
        expectedEndAt: Date? = nil,
        stepStartedAt: Date? = nil
    ) {
        self.startedAt = startedAt
        self.accumulatedElapsedBeforeAnchor = accumulatedElapsedBeforeAnchor
        self.pauseStartedAt = pauseStartedAt
        self.isPaused = isPaused
        self.expectedEndAt = expectedEndAt
        self.stepStartedAt = stepStartedAt
    }

    /// A running timer started at `instant`; with `duration`, a countdown ending `duration` later.
    public static func started(at instant: Date, duration: TimeInterval? = nil) -> SessionTimerAnchor {
        let end = duration.map { Self.date(fromMicros: Self.micros(instant) + Self.micros(seconds: $0)) }
        return SessionTimerAnchor(startedAt: instant, expectedEndAt: end)
    }

    /// Active time at `instant`, in whole microseconds; never negative, never decreasing in
    /// `instant` while running, constant while paused.
    public func elapsedMicroseconds(at instant: Date) -> Int64 {
        Self.micros(seconds: accumulatedElapsedBeforeAnchor) + max(0, activeEndMicros(at: instant) - Self.micros(startedAt))
    }

    /// Active time at `instant`, in seconds (``elapsedMicroseconds(at:)`` / 10^6).
    public func elapsed(at instant: Date) -> TimeInterval {
        Double(elapsedMicroseconds(at: instant)) / 1_000_000
    }

    /// The timer paused at `instant`; unchanged if already paused. A pause before the anchor
    /// counts as a pause at the anchor.
    public func paused(at instant: Date) -> SessionTimerAnchor {
        guard !isPaused else { return self }
        var next = self
        next.isPaused = true
        next.pauseStartedAt = Self.date(fromMicros: max(Self.micros(instant), Self.micros(startedAt)))
        return next
    }

    /// The timer resumed at `instant`: the accumulator absorbs the active time up to the pause,
    /// the anchor moves to `instant`, and `expectedEndAt`/`stepStartedAt` shift by the pause's
    /// length. Unchanged if running. A resume before the pause counts as a resume at the pause.
    public func resumed(at instant: Date) -> SessionTimerAnchor {
        guard isPaused else { return self }
        let pause = max(Self.micros(pauseStartedAt ?? startedAt), Self.micros(startedAt))
        let resume = max(Self.micros(instant), pause)
        let pausedFor = resume - pause
        var next = self
        next.accumulatedElapsedBeforeAnchor = Double(elapsedMicroseconds(at: instant)) / 1_000_000
        next.startedAt = Self.date(fromMicros: resume)
        next.isPaused = false
        next.pauseStartedAt = nil
        next.expectedEndAt = expectedEndAt.map { Self.date(fromMicros: Self.micros($0) + pausedFor) }
        next.stepStartedAt = stepStartedAt.map { Self.date(fromMicros: Self.micros($0) + pausedFor) }
        return next
    }

    /// For a countdown, the time left at `instant` in seconds (0 when done, frozen while
    /// paused); `nil` for an open-ended timer.
    public func remaining(at instant: Date) -> TimeInterval? {
        guard let end = expectedEndAt else { return nil }
        return Double(max(0, Self.micros(end) - activeEndMicros(at: instant))) / 1_000_000
    }

    /// Whether a countdown has run out at `instant`; always `false` for an open-ended timer.
    public func isDone(at instant: Date) -> Bool { remaining(at: instant) == 0 }

    /// The timer with a new step beginning at `instant` (while paused: at the pause).
    public func beginningStep(at instant: Date) -> SessionTimerAnchor {
        var next = self
        next.stepStartedAt = Self.date(fromMicros: activeEndMicros(at: instant))
        return next
    }

    /// Active time in the current step at `instant`, in seconds; `nil` without steps.
    public func stepElapsed(at instant: Date) -> TimeInterval? {
        guard let step = stepStartedAt else { return nil }
        return Double(max(0, activeEndMicros(at: instant) - Self.micros(step))) / 1_000_000
    }

    /// The same timer with every instant moved by `offset` seconds: how a daemon rewrites a
    /// peer's anchor into the local clock using the estimated clock offset.
    public func shifted(by offset: TimeInterval) -> SessionTimerAnchor {
        let delta = Self.micros(seconds: offset)
        func move(_ date: Date) -> Date { Self.date(fromMicros: Self.micros(date) + delta) }
        var next = self
        next.startedAt = move(startedAt)
        next.pauseStartedAt = pauseStartedAt.map(move)
        next.expectedEndAt = expectedEndAt.map(move)
        next.stepStartedAt = stepStartedAt.map(move)
        return next
    }

    // MARK: - Fixed-point conversion

    /// Where active time stops counting: `instant` while running, the pause while paused.
    private func activeEndMicros(at instant: Date) -> Int64 {
        isPaused ? Self.micros(pauseStartedAt ?? startedAt) : Self.micros(instant)
    }

    private static let limit: Double = 2_305_843_009_213_693_952  // 2^61

    /// Seconds → whole microseconds, rounded half away from zero, clamped to ±2^61.
    static func micros(seconds: Double) -> Int64 {
        guard seconds.isFinite else { return 0 }
        let scaled = (seconds * 1_000_000).rounded(.toNearestOrAwayFromZero)
        return Int64(min(max(scaled, -limit), limit))
    }

    /// An instant → whole microseconds since the reference date.
    static func micros(_ date: Date) -> Int64 { micros(seconds: date.timeIntervalSinceReferenceDate) }

    /// Whole microseconds since the reference date → an instant.
    static func date(fromMicros value: Int64) -> Date {
        Date(timeIntervalSinceReferenceDate: Double(value) / 1_000_000)
    }
}
