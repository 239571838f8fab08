/// Lets one warning of a kind through per interval and counts the ones it holds back, so a
/// peer that repeats a fault thousands of times a second costs one log line per interval,
/// which also says how many were held back.
///
/// A value type driven with the caller's monotonic time (`now`, nanoseconds), so tests step it
/// without a clock:
/// ```
/// var warning = RateLimitedWarning(intervalSeconds: 10)
/// if let suppressed = warning.admit(now: now) {
///     logger.warning("…", metadata: ["suppressed": "\(suppressed)"])
/// }
/// ```
struct RateLimitedWarning: Sendable, Equatable {
    /// Shortest time between two warnings, nanoseconds.
    let interval: UInt64
    /// When the last warning went out (nil: never).
    private(set) var lastLoggedAt: UInt64?
    /// Warnings held back since the last one that went out.
    private(set) var suppressed: UInt64 = 0

    /// A limiter letting one warning through per `intervalSeconds` (at least 1 ms).
    init(intervalSeconds: Double = 10) {
        interval = max(Nanoseconds.from(seconds: intervalSeconds), 1_000_000)
    }

    /// One occurrence at `now`: nil when it is held back (counted), otherwise the number of
    /// occurrences held back since the previous warning (to put in this one).
    mutating func admit(now: UInt64) -> UInt64? {
        if let last = lastLoggedAt, now >= last, now - last < interval {
            suppressed &+= 1
            return nil
        }
        let held = suppressed
        suppressed = 0
        lastLoggedAt = now
        return held
    }

    /// From a periodic tick: once the interval has passed, the number of occurrences held back
    /// since the last warning (then reset, and counting as a warning sent at `now`); nil when
    /// there is nothing to summarise yet.
    mutating func summary(now: UInt64) -> UInt64? {
        guard suppressed > 0, let last = lastLoggedAt, now < last || now - last >= interval else { return nil }
        let held = suppressed
        suppressed = 0
        lastLoggedAt = now
        return held
    }
}
