import Testing
@testable import MeshDaemon

extension ClockOffsetEstimator {
    /// A request stamped `t1` went out and its reply came back (tests of the arithmetic).
    @discardableResult
    mutating func solicited(t1: Int64, t2: Int64, t3: Int64, t4: Int64, now: UInt64) -> Bool {
        requestSent(t1: t1)
        return add(t1: t1, t2: t2, t3: t3, t4: t4, now: now)
    }
}

@Suite("Clock offset estimator")
struct ClockOffsetEstimatorTests {
    @Test func symmetricPathGivesTheExactOffset() throws {
        var estimator = ClockOffsetEstimator()
        // Peer is 2.5 s ahead; 100 µs each way; peer holds 10 µs.
        let skew: Int64 = 2_500_000_000
        estimator.solicited(t1: 1_000_000, t2: 1_100_000 + skew, t3: 1_110_000 + skew, t4: 1_210_000, now: 1)
        let estimate = try #require(estimator.estimate(now: 1))
        #expect(estimate.offsetNanoseconds == skew)
        #expect(estimate.roundTripNanoseconds == 200_000)
        #expect(estimate.errorBoundNanoseconds == 100_000)
    }

    @Test func lowestRoundTripSampleWins() throws {
        var estimator = ClockOffsetEstimator()
        // A queued sample: 5 ms out, 0.1 ms back → offset error of ~2.45 ms.
        estimator.solicited(t1: 0, t2: 5_000_000, t3: 5_000_000, t4: 5_100_000, now: 1)
        estimator.solicited(t1: 10_000_000, t2: 10_050_000, t3: 10_050_000, t4: 10_100_000, now: 2)
        let estimate = try #require(estimator.estimate(now: 2))
        #expect(estimate.offsetNanoseconds == 0)
        #expect(estimate.errorBoundNanoseconds == 50_000)
        #expect(estimator.smoothedRoundTripNanoseconds == Int64(4_475_000))   // 5.1 ms, then 7/8 of it + 1/8 of 0.1 ms
    }

    @Test func oldSamplesLeaveTheWindow() throws {
        var estimator = ClockOffsetEstimator(windowSeconds: 10, capacity: 8)
        estimator.solicited(t1: 0, t2: 10, t3: 10, t4: 20, now: 0)                       // great RTT, old
        estimator.solicited(t1: 0, t2: 1_000, t3: 1_000, t4: 3_000, now: 11_000_000_000)  // worse, recent
        let estimate = try #require(estimator.estimate(now: 11_000_000_000))
        #expect(estimate.roundTripNanoseconds == 3_000)
        #expect(estimator.samples.count == 1)
    }

    @Test func impossibleSamplesAreIgnored() {
        var estimator = ClockOffsetEstimator()
        let peerSentFirst = estimator.solicited(t1: 100, t2: 50, t3: 40, t4: 200, now: 0)
        let negativeRoundTrip = estimator.solicited(t1: 100, t2: 0, t3: 500, t4: 150, now: 0)
        let overflowing = estimator.solicited(t1: Int64.min, t2: Int64.max, t3: 0, t4: 0, now: 0)
        #expect(!peerSentFirst && !negativeRoundTrip && !overflowing)
        #expect(estimator.estimate(now: 0) == nil)
    }

    /// The reply that used to kill the daemon (`rtt = total - peerHold` overflowed), sent for a
    /// request that is outstanding and for one that is not.
    @Test func boundaryRepliesNeitherTrapNorCount() {
        var estimator = ClockOffsetEstimator()
        let now: Int64 = 1_700_000_000_000_000_000
        #expect(estimator.addSample(t1: Int64.max, t2: 0, t3: Int64.max, t4: now, now: 1) == .unsolicited)
        estimator.requestSent(t1: Int64.max)
        #expect(estimator.addSample(t1: Int64.max, t2: 0, t3: Int64.max, t4: now, now: 1) == .impossible)
        let boundary: [Int64] = [0, 1, -1, .max, .min, .max - 1, .min + 1, now]
        for t1 in boundary {
            for t2 in boundary {
                for t3 in boundary {
                    estimator.requestSent(t1: t1)
                    _ = estimator.addSample(t1: t1, t2: t2, t3: t3, t4: now, now: 2)
                }
            }
        }
        if let estimate = estimator.estimate(now: 2) {
            #expect(estimate.offsetNanoseconds.magnitude <= UInt64(ClockOffsetEstimator.maximumOffsetNanoseconds))
        }
    }

    @Test func repliesCountOnceAndOnlyForRequestsSent() {
        var estimator = ClockOffsetEstimator()
        #expect(estimator.addSample(t1: 1_000, t2: 1_100, t3: 1_110, t4: 1_200, now: 1) == .unsolicited)
        estimator.requestSent(t1: 1_000)
        #expect(estimator.addSample(t1: 1_000, t2: 1_100, t3: 1_110, t4: 1_200, now: 1) == nil)
        #expect(estimator.addSample(t1: 1_000, t2: 1_100, t3: 1_110, t4: 1_200, now: 1) == .unsolicited)
        // Only the last 16 requests are remembered.
        for t1 in Int64(0)..<20 { estimator.requestSent(t1: t1 * 10_000) }
        #expect(estimator.outstanding.count == ClockOffsetEstimator.outstandingCapacity)
        #expect(estimator.addSample(t1: 0, t2: 10, t3: 10, t4: 20, now: 2) == .unsolicited)
    }

    @Test func offsetsBeyondAnHourAreRefused() {
        var estimator = ClockOffsetEstimator()
        let t1: Int64 = 1_700_000_000_000_000_000
        let years: Int64 = 200 * 365 * 86_400 * 1_000_000_000
        estimator.requestSent(t1: t1)
        #expect(estimator.addSample(t1: t1, t2: t1 + years, t3: t1 + years, t4: t1 + 1_000, now: 1) == .outOfBounds)
        estimator.requestSent(t1: t1)
        #expect(estimator.addSample(t1: t1, t2: t1 - years, t3: t1 - years, t4: t1 + 1_000, now: 1) == .outOfBounds)
        // A round trip over 30 s is no measurement either.
        estimator.requestSent(t1: t1)
        #expect(estimator.addSample(t1: t1, t2: t1, t3: t1, t4: t1 + 31_000_000_000, now: 1) == .outOfBounds)
        #expect(estimator.estimate(now: 1) == nil)
        // 59 minutes ahead is believed.
        let ahead: Int64 = 59 * 60 * 1_000_000_000
        estimator.requestSent(t1: t1)
        #expect(estimator.addSample(t1: t1, t2: t1 + 500 + ahead, t3: t1 + 500 + ahead, t4: t1 + 1_000, now: 1) == nil)
        #expect(estimator.estimate(now: 1)?.offsetNanoseconds == ahead)
    }

    /// A sample with a tiny round trip but an offset far from the others' does not win.
    @Test func outliersDoNotWin() throws {
        var estimator = ClockOffsetEstimator()
        let base: Int64 = 1_700_000_000_000_000_000
        for index in Int64(0)..<4 {
            let t1 = base + index * 1_000_000_000
            estimator.solicited(t1: t1, t2: t1 + 100_000, t3: t1 + 110_000, t4: t1 + 210_000, now: UInt64(index))
        }
        let t1 = base + 10_000_000_000
        let lie: Int64 = 1_800_000_000_000    // 30 minutes, round trip 1 ns
        estimator.solicited(t1: t1, t2: t1 + lie, t3: t1 + lie + 1_000, t4: t1 + 1_001, now: 10)
        let estimate = try #require(estimator.estimate(now: 10))
        #expect(estimate.offsetNanoseconds == 0)
        #expect(estimate.roundTripNanoseconds == 200_000)
    }
}
