/// Jittered, bounded exponential backoff for reconnecting to a paired peer that is away.
///
/// The n-th delay is `min(initial * 2^n, maximum)`, scaled by a random factor in
/// `[1 - jitter, 1 + jitter]` so two daemons that lost each other at the same moment do not
/// retry in lock step. `reset()` after a channel becomes active.
struct ReconnectBackoff: Sendable, Equatable {
    /// First delay, nanoseconds.
    var initial: UInt64
    /// Upper bound before jitter, nanoseconds.
    var maximum: UInt64
    /// Relative jitter, 0 … 1.
    var jitter: Double
    /// Failed attempts since the last reset.
    private(set) var attempts: Int = 0

    /// Creates a backoff from seconds.
    init(initialSeconds: Double = 0.1, maximumSeconds: Double = 8, jitter: Double = 0.25) {
        self.initial = Nanoseconds.from(seconds: max(initialSeconds, 0.001))
        self.maximum = max(Nanoseconds.from(seconds: max(maximumSeconds, 0.001)), self.initial)
        self.jitter = min(max(jitter, 0), 1)
    }

    /// The delay before the next attempt, in nanoseconds; counts the attempt.
    mutating func nextDelay<R: RandomNumberGenerator>(using rng: inout R) -> UInt64 {
        let shift = min(attempts, 40)
        attempts += 1
        let (scaled, overflow) = initial.multipliedReportingOverflow(by: UInt64(1) << UInt64(shift))
        let base = overflow ? maximum : min(scaled, maximum)
        guard jitter > 0 else { return base }
        let factor = Double.random(in: (1 - jitter)...(1 + jitter), using: &rng)
        return UInt64(Double(base) * factor)
    }

    /// Starts over (after a successful connection).
    mutating func reset() { attempts = 0 }
}
