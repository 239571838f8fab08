/// When to dial one paired device: at most one dial job waiting or running, a jittered backoff
/// between failed rounds, and a number per attempt so a finished older job cannot end a newer
/// attempt. Decisions only; the node's `Dialer` runs the jobs (Node/Dialer.swift).
struct DialState: Sendable {
    /// A dial job is scheduled (possibly waiting out its backoff) and has not begun.
    private(set) var scheduled = false
    /// A connection attempt is under way right now.
    private(set) var attempting = false
    /// Number of the latest attempt.
    private(set) var generation: UInt64 = 0
    var backoff: ReconnectBackoff

    init(backoff: ReconnectBackoff) { self.backoff = backoff }

    /// A dial is wanted (start, a channel closed, a round failed): the delay of the job to
    /// schedule, in nanoseconds (0 with `immediately`, else the next backoff), or nil when a
    /// job is already waiting or running or the channel is up.
    mutating func schedule<R: RandomNumberGenerator>(immediately: Bool, channelActive: Bool, using random: inout R) -> UInt64? {
        guard !scheduled, !attempting, !channelActive else { return nil }
        scheduled = true
        return immediately ? 0 : backoff.nextDelay(using: &random)
    }

    /// A job marked scheduled (by `kick`) is not started after all; `schedule` may mark one again.
    mutating func abandonScheduled() { scheduled = false }

    /// A scheduled job is due: whether it should look for addresses (false when the channel is
    /// up or an attempt started early for a new address is running).
    mutating func due(channelActive: Bool) -> Bool {
        scheduled = false
        return !channelActive && !attempting
    }

    /// The due job has addresses to try: the attempt's number.
    mutating func startAttempt() -> UInt64 {
        attempting = true
        generation &+= 1
        return generation
    }

    /// Attempt `generation` ended: true when a new, backed-off dial should be scheduled (it
    /// failed at every address and is still the latest attempt).
    mutating func attemptEnded(generation: UInt64, failed: Bool) -> Bool {
        guard generation == self.generation else { return false }
        attempting = false
        return failed
    }

    /// A channel became active.
    mutating func activated() {
        attempting = false
        backoff.reset()
    }

    /// What to do when the device should be tried now instead of after its backoff.
    enum Kick: Equatable, Sendable {
        /// The channel is up: nothing.
        case none
        /// Dial now (a job is scheduled for it).
        case dialNow
        /// An attempt is running: dial the addresses it is not trying next to it.
        case dialBesideAttempt
    }

    /// Try now (a new address, a link that came back): the backoff starts over.
    mutating func kick(channelActive: Bool) -> Kick {
        guard !channelActive else { return .none }
        backoff.reset()
        if attempting { return .dialBesideAttempt }
        scheduled = true
        return .dialNow
    }
}
