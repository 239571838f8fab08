import Testing
@testable import MeshDaemon

@Suite("Clock offset estimator")
struct ClockOffsetEstimatorTests {
    @Test func symmetricPathGivesTheExactOffset() throws {
        var estimator = ClockOffsetEstimator()
        // Peer is 2.5 s ahead; 100 µs each way; peer holds 10 µs.
        let skew: Int64 = 2_500_000_000
        estimator.add(t1: 1_000_000, t2: 1_100_000 + skew, t3: 1_110_000 + skew, t4: 1_210_000, now: 1)
        let estimate = try #require(estimator.estimate(now: 1))
        #expect(estimate.offsetNanoseconds == skew)
        #expect(estimate.roundTripNanoseconds == 200_000)
        #expect(estimate.errorBoundNanoseconds == 100_000)
    }

    @Test func lowestRoundTripSampleWins() throws {
        var estimator = ClockOffsetEstimator()
        // A queued sample: 5 ms out, 0.1 ms back → offset error of ~2.45 ms.
        estimator.add(t1: 0, t2: 5_000_000, t3: 5_000_000, t4: 5_100_000, now: 1)
        estimator.add(t1: 10_000_000, t2: 10_050_000, t3: 10_050_000, t4: 10_100_000, now: 2)
        let estimate = try #require(estimator.estimate(now: 2))
        #expect(estimate.offsetNanoseconds == 0)
        #expect(estimate.errorBoundNanoseconds == 50_000)
        #expect(estimator.smoothedRoundTripNanoseconds == Int64(4_475_000))   // 5.1 ms, then 7/8 of it + 1/8 of 0.1 ms
    }

    @Test func oldSamplesLeaveTheWindow() throws {
        var estimator = ClockOffsetEstimator(windowSeconds: 10, capacity: 8)
        estimator.add(t1: 0, t2: 10, t3: 10, t4: 20, now: 0)                       // great RTT, old
        estimator.add(t1: 0, t2: 1_000, t3: 1_000, t4: 3_000, now: 11_000_000_000)  // worse, recent
        let estimate = try #require(estimator.estimate(now: 11_000_000_000))
        #expect(estimate.roundTripNanoseconds == 3_000)
        #expect(estimator.samples.count == 1)
    }

    @Test func impossibleSamplesAreIgnored() {
        var estimator = ClockOffsetEstimator()
        let peerSentFirst = estimator.add(t1: 100, t2: 50, t3: 40, t4: 200, now: 0)
        let negativeRoundTrip = estimator.add(t1: 100, t2: 0, t3: 500, t4: 150, now: 0)
        let overflowing = estimator.add(t1: Int64.min, t2: Int64.max, t3: 0, t4: 0, now: 0)
        #expect(!peerSentFirst && !negativeRoundTrip && !overflowing)
        #expect(estimator.estimate(now: 0) == nil)
    }
}
