/// WireGuard's key-lifetime timers for one channel.
///
/// - After `rekeyAfter` (120 s) or when a sealer reports its counter limit, the side that
///   *initiated* the current keys starts a fresh handshake over the channel. Only that side
///   does, so the two ends never rekey at the same time (a counter limit lets either side
///   start one; the simultaneous-connect rule settles a collision).
/// - A rekey that does not complete within `rekeyTimeout` is retried on the next tick.
/// - Keys older than `rejectAfter` (180 s) are never used again: the channel closes and the
///   normal reconnect takes over.
struct RekeyTimer: Sendable, Equatable {
    /// What the channel should do now.
    enum Action: Sendable, Equatable {
        case none
        case startRekey
        case closeExpired
    }

    var rekeyAfter: UInt64
    var rejectAfter: UInt64
    var rekeyTimeout: UInt64
    /// Monotonic instant the current keys were made.
    private(set) var keysCreatedAt: UInt64
    /// Whether this side initiated the handshake that made the current keys.
    private(set) var locallyInitiated: Bool
    /// Monotonic instant a rekey started, while one is in flight.
    private(set) var rekeyStartedAt: UInt64?
    private var counterExhausted = false

    /// Creates timers for keys made at `now`.
    init(rekeyAfterSeconds: Double, rejectAfterSeconds: Double, rekeyTimeoutSeconds: Double = 5,
         keysCreatedAt now: UInt64, locallyInitiated: Bool) {
        rekeyAfter = Nanoseconds.from(seconds: max(rekeyAfterSeconds, 0.01))
        rejectAfter = max(Nanoseconds.from(seconds: max(rejectAfterSeconds, 0.01)), rekeyAfter)
        rekeyTimeout = Nanoseconds.from(seconds: max(rekeyTimeoutSeconds, 0.01))
        keysCreatedAt = now
        self.locallyInitiated = locallyInitiated
    }

    /// The sealer hit its counter limit: rekey at once.
    mutating func counterLimitReached() { counterExhausted = true }

    /// Decides what to do at monotonic time `now`; marks a rekey as started when it says so.
    mutating func tick(now: UInt64) -> Action {
        let age = now >= keysCreatedAt ? now - keysCreatedAt : 0
        if age >= rejectAfter { return .closeExpired }
        guard (locallyInitiated && age >= rekeyAfter) || counterExhausted else { return .none }
        if let started = rekeyStartedAt, now < started &+ rekeyTimeout { return .none }
        rekeyStartedAt = now
        return .startRekey
    }

    /// New keys are in use from `now`; `locallyInitiated` says which side made them.
    mutating func keysReplaced(now: UInt64, locallyInitiated: Bool) {
        keysCreatedAt = now
        self.locallyInitiated = locallyInitiated
        rekeyStartedAt = nil
        counterExhausted = false
    }
}
