import Testing
#if canImport(Glibc)
import Glibc
#endif
@testable import MeshDaemon

private struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Seed from MESH_PROPERTY_SEED_BASE (printed, so a failure reproduces).
private func seed() -> UInt64 {
    let value = getenv("MESH_PROPERTY_SEED_BASE").flatMap { UInt64(String(cString: $0)) } ?? 0x5EED
    print("ChannelTimerTests seed: \(value)")
    return value
}

@Suite("Channel timers and limits")
struct ChannelTimerTests {
    @Test func backoffGrowsJittersAndStaysBounded() {
        var rng = SplitMix(state: seed())
        var backoff = ReconnectBackoff(initialSeconds: 0.1, maximumSeconds: 2, jitter: 0.25)
        var delays: [UInt64] = []
        for _ in 0..<12 { delays.append(backoff.nextDelay(using: &rng)) }
        #expect(delays[0] >= 75_000_000 && delays[0] <= 125_000_000)
        #expect(delays[3] >= 600_000_000 && delays[3] <= 1_000_000_000)
        #expect(delays.allSatisfy { $0 <= 2_500_000_000 })
        #expect(delays.suffix(4).allSatisfy { $0 >= 1_500_000_000 })
        backoff.reset()
        let afterReset = backoff.nextDelay(using: &rng)
        #expect(afterReset <= 125_000_000)
    }

    @Test func rateLimiterRefusesBeyondTheBurstAndRefills() {
        var limiter = HandshakeRateLimiter(ratePerSecond: 2, burst: 3, maximumSources: 2)
        let allowed = (0..<5).map { _ in limiter.allow(source: "10.0.0.1", now: 0) }
        #expect(allowed == [true, true, true, false, false])
        #expect(limiter.refused == 2)
        let otherSource = limiter.allow(source: "10.0.0.2", now: 0)
        let refilled = limiter.allow(source: "10.0.0.1", now: 500_000_000)   // one token after 0.5 s
        let drained = limiter.allow(source: "10.0.0.1", now: 500_000_000)
        let third = limiter.allow(source: "10.0.0.3", now: 600_000_000)
        #expect(otherSource && refilled && !drained && third)
        #expect(limiter.trackedSources <= 2)
    }

    @Test func absurdConfiguredDurationsNeverTrap() {
        #expect(Nanoseconds.from(seconds: 1.5) == 1_500_000_000)
        #expect(Nanoseconds.from(seconds: -3) == 0)
        #expect(Nanoseconds.from(seconds: .nan) == 0)
        #expect(Nanoseconds.from(seconds: .infinity) == Nanoseconds.maximum)
        #expect(Nanoseconds.from(seconds: 1e300) == Nanoseconds.maximum)
        var lease = ReachabilityLease(seconds: 1e300)
        lease.renew(now: 1)
        #expect(lease.isValid(now: 1_000_000_000_000_000))
    }

    @Test func leaseExpires() {
        var lease = ReachabilityLease(seconds: 4)
        #expect(!lease.isValid(now: 0))
        lease.renew(now: 1_000_000_000)
        #expect(lease.isValid(now: 4_999_999_999))
        #expect(!lease.isValid(now: 5_000_000_000))
        lease.revoke()
        #expect(!lease.isValid(now: 1_000_000_001))
    }

    @Test func rekeyFollowsWireGuardTimers() {
        let s: UInt64 = 1_000_000_000
        var timer = RekeyTimer(rekeyAfterSeconds: 120, rejectAfterSeconds: 180, keysCreatedAt: 0, locallyInitiated: true)
        #expect(tick(&timer, 119 * s) == .none)
        #expect(tick(&timer, 120 * s) == .startRekey)
        #expect(tick(&timer, 121 * s) == .none)            // one in flight
        #expect(tick(&timer, 126 * s) == .startRekey)      // timed out: retry
        timer.keysReplaced(now: 127 * s, locallyInitiated: true)
        #expect(tick(&timer, 200 * s) == .none)
        #expect(tick(&timer, 307 * s) == .closeExpired)

        var responder = RekeyTimer(rekeyAfterSeconds: 120, rejectAfterSeconds: 180, keysCreatedAt: 0, locallyInitiated: false)
        #expect(tick(&responder, 150 * s) == .none)        // only the initiator rekeys
        #expect(tick(&responder, 180 * s) == .closeExpired)
        var exhausted = RekeyTimer(rekeyAfterSeconds: 120, rejectAfterSeconds: 180, keysCreatedAt: 0, locallyInitiated: false)
        exhausted.counterLimitReached()
        #expect(tick(&exhausted, 1 * s) == .startRekey)
    }
}

private func tick(_ timer: inout RekeyTimer, _ now: UInt64) -> RekeyTimer.Action { timer.tick(now: now) }
