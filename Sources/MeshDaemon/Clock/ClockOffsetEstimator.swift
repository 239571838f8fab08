/// NTP-style estimate of a peer's clock offset from keepalive round trips.
///
/// Each sample is the classic four timestamps: `t1` local send, `t2` peer receive, `t3` peer
/// send (peer clock), `t4` local receive. For one sample
///
///     offset = ((t2 - t1) + (t3 - t4)) / 2        (peer minus local)
///     rtt    = (t4 - t1) - (t3 - t2)
///
/// and the true offset lies within `offset ± rtt/2`. Of the samples taken in the recent window
/// the one with the lowest round trip wins, because queueing delay is what makes a sample
/// asymmetric and therefore wrong.
struct ClockOffsetEstimator: Sendable, Equatable {
    /// One measured round trip.
    struct Sample: Sendable, Equatable {
        /// Peer minus local, nanoseconds.
        var offsetNanoseconds: Int64
        /// Round trip without the peer's processing time, nanoseconds.
        var roundTripNanoseconds: Int64
        /// When it was taken (local monotonic ns).
        var takenAt: UInt64
    }

    /// The current estimate.
    struct Estimate: Sendable, Equatable {
        /// Peer minus local, nanoseconds.
        var offsetNanoseconds: Int64
        /// Half the winning sample's round trip, nanoseconds.
        var errorBoundNanoseconds: Int64
        /// The winning sample's round trip, nanoseconds.
        var roundTripNanoseconds: Int64
    }

    /// Samples older than this (ns) no longer count.
    var window: UInt64
    /// At most this many samples are kept.
    var capacity: Int
    private(set) var samples: [Sample] = []
    /// Exponentially smoothed round trip (RFC 6298 weights, 1/8), nanoseconds.
    private(set) var smoothedRoundTripNanoseconds: Int64?

    /// Creates an estimator keeping `capacity` samples of the last `windowSeconds`.
    init(windowSeconds: Double = 64, capacity: Int = 64) {
        self.window = Nanoseconds.from(seconds: windowSeconds)
        self.capacity = max(capacity, 1)
    }

    /// Adds one four-timestamp sample taken at local monotonic time `now`. Samples with a
    /// negative round trip (impossible unless a clock jumped) are ignored; returns whether the
    /// sample was kept.
    @discardableResult
    mutating func add(t1: Int64, t2: Int64, t3: Int64, t4: Int64, now: UInt64) -> Bool {
        let (outbound, o1) = t2.subtractingReportingOverflow(t1)
        let (inbound, o2) = t3.subtractingReportingOverflow(t4)
        let (total, o3) = (t4.subtractingReportingOverflow(t1))
        let (peerHold, o4) = t3.subtractingReportingOverflow(t2)
        guard !o1, !o2, !o3, !o4, peerHold >= 0 else { return false }
        let rtt = total - peerHold
        guard rtt >= 0 else { return false }
        let offset = outbound / 2 + inbound / 2 + (outbound % 2 + inbound % 2) / 2
        samples.append(Sample(offsetNanoseconds: offset, roundTripNanoseconds: rtt, takenAt: now))
        smoothedRoundTripNanoseconds = smoothedRoundTripNanoseconds.map { $0 - $0 / 8 + rtt / 8 } ?? rtt
        prune(now: now)
        return true
    }

    /// Drops samples that left the window or exceed the capacity (oldest first).
    mutating func prune(now: UInt64) {
        samples.removeAll { now > $0.takenAt && now - $0.takenAt > window }
        if samples.count > capacity { samples.removeFirst(samples.count - capacity) }
    }

    /// The lowest-RTT sample of the window, if any.
    func estimate(now: UInt64) -> Estimate? {
        let live = samples.filter { !(now > $0.takenAt && now - $0.takenAt > window) }
        guard let best = live.min(by: { $0.roundTripNanoseconds < $1.roundTripNanoseconds }) else { return nil }
        return Estimate(offsetNanoseconds: best.offsetNanoseconds,
                        errorBoundNanoseconds: (best.roundTripNanoseconds + 1) / 2,
                        roundTripNanoseconds: best.roundTripNanoseconds)
    }

    /// The most recent sample's round trip.
    var latestRoundTripNanoseconds: Int64? { samples.last?.roundTripNanoseconds }
}
