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
///
/// `t2` and `t3` come from the peer, so nothing about them is believed: a reply counts only for
/// a request this side sent and has not had answered yet (`requestSent(t1:)`, matched by `t1`),
/// every difference is overflow-checked, the peer's hold time must fit inside the round trip,
/// and a sample whose offset exceeds ±`maximumOffsetNanoseconds` (one hour) or whose round trip
/// exceeds `maximumRoundTripNanoseconds` (30 s) is refused. With three or more samples in the
/// window, samples farther than 250 ms + half their round trip from the median offset are
/// outliers and never win.
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

    /// Why `add` refused a sample.
    enum Refusal: Sendable, Equatable {
        /// No request with this `t1` is outstanding (never sent, answered already, or forgotten).
        case unsolicited
        /// The timestamps contradict each other (negative hold or round trip, an overflow).
        case impossible
        /// Offset or round trip beyond the bounds.
        case outOfBounds
    }

    /// Largest clock offset believed, either way: one hour.
    static let maximumOffsetNanoseconds: Int64 = 3_600_000_000_000
    /// Largest round trip believed: 30 s.
    static let maximumRoundTripNanoseconds: Int64 = 30_000_000_000
    /// Requests remembered while waiting for their reply (the oldest is forgotten first).
    static let outstandingCapacity = 16
    /// Distance from the median offset beyond which a sample is an outlier, plus half its RTT.
    static let outlierToleranceNanoseconds: Int64 = 250_000_000

    /// Samples older than this (ns) no longer count.
    var window: UInt64
    /// At most this many samples are kept.
    var capacity: Int
    private(set) var samples: [Sample] = []
    /// `t1` of the requests sent and not answered yet, oldest first.
    private(set) var outstanding: [Int64] = []
    /// Exponentially smoothed round trip (RFC 6298 weights, 1/8), nanoseconds.
    private(set) var smoothedRoundTripNanoseconds: Int64?

    /// Creates an estimator keeping `capacity` samples of the last `windowSeconds`.
    init(windowSeconds: Double = 64, capacity: Int = 64) {
        self.window = Nanoseconds.from(seconds: windowSeconds)
        self.capacity = max(capacity, 1)
    }

    /// A keepalive request stamped `t1` went out: its reply may be added.
    mutating func requestSent(t1: Int64) {
        if outstanding.count >= Self.outstandingCapacity { outstanding.removeFirst(outstanding.count - Self.outstandingCapacity + 1) }
        outstanding.append(t1)
    }

    /// Adds one four-timestamp sample taken at local monotonic time `now`; returns whether it
    /// was kept. The request `t1` is no longer outstanding afterwards, whatever the outcome.
    @discardableResult
    mutating func add(t1: Int64, t2: Int64, t3: Int64, t4: Int64, now: UInt64) -> Bool {
        addSample(t1: t1, t2: t2, t3: t3, t4: t4, now: now) == nil
    }

    /// As `add`, saying why a sample was refused (nil: kept).
    mutating func addSample(t1: Int64, t2: Int64, t3: Int64, t4: Int64, now: UInt64) -> Refusal? {
        guard let index = outstanding.firstIndex(of: t1) else { return .unsolicited }
        outstanding.remove(at: index)
        guard let sample = Self.sample(t1: t1, t2: t2, t3: t3, t4: t4, now: now) else { return .impossible }
        guard sample.roundTripNanoseconds <= Self.maximumRoundTripNanoseconds,
              sample.offsetNanoseconds.magnitude <= Self.maximumOffsetNanoseconds.magnitude else { return .outOfBounds }
        samples.append(sample)
        let rtt = sample.roundTripNanoseconds
        smoothedRoundTripNanoseconds = smoothedRoundTripNanoseconds.map { $0 - $0 / 8 + rtt / 8 } ?? rtt
        prune(now: now)
        return nil
    }

    /// The sample of four timestamps, or nil when they contradict each other or overflow.
    static func sample(t1: Int64, t2: Int64, t3: Int64, t4: Int64, now: UInt64) -> Sample? {
        let (outbound, o1) = t2.subtractingReportingOverflow(t1)
        let (inbound, o2) = t3.subtractingReportingOverflow(t4)
        let (total, o3) = t4.subtractingReportingOverflow(t1)
        let (peerHold, o4) = t3.subtractingReportingOverflow(t2)
        guard !o1, !o2, !o3, !o4, peerHold >= 0, total >= 0, peerHold <= total else { return nil }
        let rtt = total - peerHold    // 0 ≤ peerHold ≤ total: cannot overflow
        // Each half is within Int64's half range: the sum cannot overflow.
        let offset = outbound / 2 + inbound / 2 + (outbound % 2 + inbound % 2) / 2
        return Sample(offsetNanoseconds: offset, roundTripNanoseconds: rtt, takenAt: now)
    }

    /// Drops samples that left the window or exceed the capacity (oldest first).
    mutating func prune(now: UInt64) {
        samples.removeAll { now > $0.takenAt && now - $0.takenAt > window }
        if samples.count > capacity { samples.removeFirst(samples.count - capacity) }
    }

    /// The lowest-RTT sample of the window that is not an outlier, if any.
    func estimate(now: UInt64) -> Estimate? {
        let live = samples.filter { !(now > $0.takenAt && now - $0.takenAt > window) }
        var candidates = live
        if live.count >= 3 {
            let offsets = live.map(\.offsetNanoseconds).sorted()
            let median = offsets[offsets.count / 2]
            // Offsets are within ±1 h and round trips ≤ 30 s: none of this can overflow.
            candidates = live.filter {
                ($0.offsetNanoseconds - median).magnitude
                    <= UInt64(Self.outlierToleranceNanoseconds + $0.roundTripNanoseconds / 2)
            }
        }
        guard let best = candidates.min(by: { $0.roundTripNanoseconds < $1.roundTripNanoseconds }) else { return nil }
        return Estimate(offsetNanoseconds: best.offsetNanoseconds,
                        errorBoundNanoseconds: best.roundTripNanoseconds / 2 + best.roundTripNanoseconds % 2,
                        roundTripNanoseconds: best.roundTripNanoseconds)
    }

    /// The most recent sample's round trip.
    var latestRoundTripNanoseconds: Int64? { samples.last?.roundTripNanoseconds }
}
