import Foundation
import SessionMesh
import Testing

@Suite("SessionTimerAnchor")
struct TimerAnchorTests {
    static let base = Date(timeIntervalSinceReferenceDate: 780_000_000)  // 2025

    static func instant(_ micros: Int64) -> Date {
        Date(timeIntervalSinceReferenceDate: (780_000_000 * 1_000_000 + Double(micros)) / 1_000_000)
    }

    @Test func memberwiseInitKeepsTheSeedOrder() {
        let anchor = SessionTimerAnchor(
            startedAt: Self.base, accumulatedElapsedBeforeAnchor: 5, pauseStartedAt: nil,
            isPaused: false, expectedEndAt: nil, stepStartedAt: nil)
        #expect(anchor.elapsed(at: Self.base.addingTimeInterval(2)) == 7)
    }

    @Test func pauseFreezesAndResumeRebases() {
        var anchor = SessionTimerAnchor.started(at: Self.instant(0))
        anchor = anchor.paused(at: Self.instant(10_000_000))
        #expect(anchor.elapsed(at: Self.instant(50_000_000)) == 10)
        anchor = anchor.resumed(at: Self.instant(60_000_000))
        #expect(anchor.startedAt == Self.instant(60_000_000))
        #expect(anchor.accumulatedElapsedBeforeAnchor == 10)
        #expect(anchor.elapsed(at: Self.instant(61_500_000)) == 11.5)
        #expect(anchor.paused(at: Self.instant(70_000_000)).paused(at: Self.instant(80_000_000)).elapsed(at: Self.instant(90_000_000)) == 20)
    }

    @Test func countdownRemainingAndDone() {
        var anchor = SessionTimerAnchor.started(at: Self.instant(0), duration: 30)
        #expect(anchor.remaining(at: Self.instant(10_000_000)) == 20)
        anchor = anchor.paused(at: Self.instant(10_000_000))
        #expect(anchor.remaining(at: Self.instant(25_000_000)) == 20)
        anchor = anchor.resumed(at: Self.instant(25_000_000))
        #expect(anchor.expectedEndAt == Self.instant(45_000_000))
        #expect(anchor.remaining(at: Self.instant(44_000_000)) == 1)
        #expect(!anchor.isDone(at: Self.instant(44_999_999)))
        #expect(anchor.isDone(at: Self.instant(45_000_000)))
        #expect(anchor.remaining(at: Self.instant(99_000_000)) == 0)
        #expect(SessionTimerAnchor.started(at: Self.base).remaining(at: Self.base) == nil)
    }

    @Test func stepsCountActiveTimeInTheCurrentStep() {
        var anchor = SessionTimerAnchor.started(at: Self.instant(0)).beginningStep(at: Self.instant(5_000_000))
        #expect(anchor.stepElapsed(at: Self.instant(8_000_000)) == 3)
        anchor = anchor.paused(at: Self.instant(8_000_000)).resumed(at: Self.instant(20_000_000))
        #expect(anchor.stepElapsed(at: Self.instant(21_000_000)) == 4)
        #expect(anchor.elapsed(at: Self.instant(21_000_000)) == 9)
    }

    @Test func shiftingMovesEveryInstantButNotElapsed() {
        let anchor = SessionTimerAnchor.started(at: Self.instant(0), duration: 60).paused(at: Self.instant(7_000_000))
        let shifted = anchor.shifted(by: -2.5)
        #expect(shifted.elapsed(at: Self.instant(1_000_000)) == anchor.elapsed(at: Self.instant(99_000_000)))
        #expect(shifted.startedAt == Self.instant(-2_500_000))
    }

    @Test func nonFiniteAndHugeInputsDoNotTrap() {
        let anchor = SessionTimerAnchor(startedAt: Date(timeIntervalSinceReferenceDate: .infinity), accumulatedElapsedBeforeAnchor: .nan)
        _ = anchor.elapsed(at: Date(timeIntervalSinceReferenceDate: -1e300))
        _ = anchor.paused(at: .distantFuture).resumed(at: Date(timeIntervalSinceReferenceDate: 1e300)).remaining(at: .distantPast)
        _ = anchor.shifted(by: 1e308)
    }

    /// For any sequence of pause/resume instants, elapsed equals the exact sum of the active
    /// intervals (in whole microseconds), never decreases while running, and a countdown's
    /// remaining time is its duration minus that, exactly.
    @Test func elapsedIsTheExactSumOfActiveIntervals() {
        let seedBase = environmentInteger("MESH_PROPERTY_SEED_BASE", default: 1)
        let seeds = environmentInteger("MESH_PROPERTY_SEEDS", default: 100)
        for seed in (0..<seeds &* 5).map({ seedBase &+ $0 }) {  // wraps: any base runs
            var random = SessionSeededRandom(seed: seed)
            var t: Int64 = Int64.random(in: 0...1_000_000_000, using: &random)
            let duration = Int64.random(in: 1...7_200_000_000, using: &random)
            var anchor = SessionTimerAnchor.started(at: Self.instant(t), duration: Double(duration) / 1_000_000)
            var active: Int64 = 0
            var runningSince: Int64? = t
            var lastElapsed: Int64 = 0
            for _ in 0..<Int.random(in: 1...40, using: &random) {
                let step = Int64.random(in: 0...3_600_000_000, using: &random)
                // Probe a few instants inside the interval: monotone while running, constant while paused.
                for _ in 0..<3 {
                    let probe = t + Int64.random(in: 0...step, using: &random)
                    let expected = active + (runningSince.map { probe - $0 } ?? 0)
                    let got = anchor.elapsedMicroseconds(at: Self.instant(probe))
                    if got != expected || got < lastElapsed {
                        Issue.record("seed \(seed): elapsed \(got) µs, expected \(expected) µs (last \(lastElapsed))")
                        return
                    }
                    // A countdown's remaining time is its duration minus the active time, exactly.
                    let remaining = anchor.remaining(at: Self.instant(probe)).map { Int64(($0 * 1_000_000).rounded()) }
                    if remaining != max(0, duration - expected) {
                        Issue.record("seed \(seed): remaining \(String(describing: remaining)) µs, expected \(max(0, duration - expected)) µs")
                        return
                    }
                }
                t += step
                if let since = runningSince {
                    active += t - since
                    runningSince = nil
                    anchor = anchor.paused(at: Self.instant(t))
                } else {
                    runningSince = t
                    anchor = anchor.resumed(at: Self.instant(t))
                }
                lastElapsed = anchor.elapsedMicroseconds(at: Self.instant(t))
                if lastElapsed != active {
                    Issue.record("seed \(seed): after a toggle elapsed \(lastElapsed) µs, expected \(active) µs")
                    return
                }
            }
        }
    }
}
