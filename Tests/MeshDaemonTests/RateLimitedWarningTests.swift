import Testing
@testable import MeshDaemon

@Suite("Rate-limited warning")
struct RateLimitedWarningTests {
    @Test func onePerIntervalWithTheCountHeldBack() {
        var warning = RateLimitedWarning(intervalSeconds: 10)
        let second: UInt64 = 1_000_000_000
        #expect(warning.admit(now: 0) == 0)
        var held = 0
        for tick in 1...133_771 where warning.admit(now: UInt64(tick) * 1_000) == nil { held += 1 }
        #expect(held == 133_771)
        #expect(warning.summary(now: 5 * second) == nil)          // not yet: the interval runs
        #expect(warning.admit(now: 10 * second) == 133_771)        // the next one says how many
        #expect(warning.admit(now: 10 * second + 1) == nil)
        #expect(warning.summary(now: 21 * second) == 1)            // a tick summarises the rest
        #expect(warning.summary(now: 40 * second) == nil)          // nothing held back since
    }

    @Test func aClockGoingBackwardsDoesNotSilenceIt() {
        var warning = RateLimitedWarning(intervalSeconds: 10)
        #expect(warning.admit(now: 50_000_000_000) == 0)
        #expect(warning.admit(now: 1) == 0)
    }
}
