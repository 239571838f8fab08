@testable import MeshDaemon
import Testing

/// Direct preferred, the relay within 2 s when no channel runs, back to direct once a direct
/// handshake authenticated, at most one change per 30 s when paths flap — the decisions alone,
/// on virtual time (`PathChoiceNodeTests` runs them in real nodes).
@Suite("Path choice: direct or relay")
struct PathChoiceTests {
    static let second: UInt64 = 1_000_000_000

    /// A choice whose first timer pass ran at `start`.
    static func started(at start: UInt64 = 0) -> PathChoice {
        var choice = PathChoice()
        #expect(choice.tick(now: start, relayAvailable: true) == .none)
        return choice
    }

    @Test func aDirectChannelIsKeptAndTheRelayIsNeverDialled() {
        var choice = Self.started()
        choice.activated(.direct, now: Self.second / 2)
        for tick in 1 ... 120 { #expect(choice.tick(now: UInt64(tick) * Self.second, relayAvailable: true) == .none) }
        #expect(choice.current == .direct)
        #expect(choice.directDialDelay(now: 60 * Self.second) == 0)
    }

    @Test func withNoChannelTheRelayIsDialledOneSecondAfterStartOnceAtATime() {
        var choice = Self.started(at: 5 * Self.second)
        #expect(choice.tick(now: 5 * Self.second + 999_999_999, relayAvailable: true) == .none)
        #expect(choice.tick(now: 6 * Self.second, relayAvailable: true) == .dialRelay)
        #expect(choice.tick(now: 7 * Self.second, relayAvailable: true) == .none, "one relay dial at a time")
        choice.activated(.relay, now: 7 * Self.second)
        #expect(choice.current == .relay)
        #expect(!choice.relayDialing)
    }

    @Test func aLostChannelGoesToTheRelayOneSecondLaterNeverHeld() {
        var choice = Self.started()
        choice.activated(.relay, now: Self.second)
        choice.activated(.direct, now: 2 * Self.second)
        #expect(choice.lastChangeAt == 2 * Self.second)
        choice.lost(now: 3 * Self.second)
        #expect(choice.current == nil)
        #expect(choice.tick(now: 3 * Self.second + 900_000_000, relayAvailable: true) == .none)
        #expect(choice.tick(now: 4 * Self.second, relayAvailable: true) == .dialRelay,
                "a change 2 s ago does not hold a channel that died")
    }

    @Test func withoutARelayOrItsBrokerNothingIsDialled() {
        var choice = Self.started()
        for tick in 1 ... 60 { #expect(choice.tick(now: UInt64(tick) * Self.second, relayAvailable: false) == .none) }
        // The broker connection comes up: the relay at the next pass.
        #expect(choice.tick(now: 61 * Self.second, relayAvailable: true) == .dialRelay)
    }

    @Test func onTheRelayDirectIsTriedAtOnceUnlessAChangeHappenedWithin30Seconds() {
        var choice = Self.started()
        choice.activated(.relay, now: 2 * Self.second)
        #expect(choice.directDialDelay(now: 2 * Self.second) == 0, "entering the relay without a channel is no change")
        choice.activated(.direct, now: 10 * Self.second)
        #expect(choice.current == .direct)
        #expect(choice.lastChangeAt == 10 * Self.second)
        // Direct dies at 12 s; the relay takes over (never held) …
        choice.lost(now: 12 * Self.second)
        #expect(choice.tick(now: 13 * Self.second, relayAvailable: true) == .dialRelay)
        choice.activated(.relay, now: 13 * Self.second)
        // … and the next direct handshake waits until 30 s after the change at 10 s.
        #expect(choice.directDialDelay(now: 15 * Self.second) == 25 * Self.second)
        #expect(choice.directDialDelay(now: 39 * Self.second) == Self.second)
        #expect(choice.directDialDelay(now: 40 * Self.second) == 0)
        choice.activated(.direct, now: 40 * Self.second)
        #expect(choice.lastChangeAt == 40 * Self.second)
    }

    @Test func aRelayReplacingADirectChannelCountsAsAChange() {
        var choice = Self.started()
        choice.activated(.direct, now: Self.second)
        choice.activated(.relay, now: 5 * Self.second)
        #expect(choice.lastChangeAt == 5 * Self.second)
        #expect(choice.directDialDelay(now: 6 * Self.second) == 29 * Self.second)
    }

    @Test func aRelayChannelClosedJustBeforeADirectOneWasHandedOverAndCountsAsAChange() {
        // The answering side: the peer closed the relay connection once its direct channel
        // ran, and that close arrived 40 ms before the direct handshake's confirm.
        var answering = Self.started()
        answering.activated(.relay, now: Self.second)
        answering.lost(now: 10 * Self.second)
        answering.activated(.direct, now: 10 * Self.second + 40_000_000)
        #expect(answering.lastChangeAt == 10 * Self.second + 40_000_000)
        // Direct dies later; back on the relay, the next move to direct waits out the 30 s.
        answering.lost(now: 14 * Self.second)
        answering.activated(.relay, now: 15 * Self.second)
        #expect(answering.directDialDelay(now: 20 * Self.second) == 20 * Self.second + 40_000_000)
        // A relay channel that died longer ago was lost, not handed over: no change, no hold.
        var lost = Self.started()
        lost.activated(.relay, now: Self.second)
        lost.lost(now: 10 * Self.second)
        lost.activated(.direct, now: 11 * Self.second + 1)
        #expect(lost.lastChangeAt == nil)
        // Nor is a direct channel that closed just before a direct one (a reconnect, not a change).
        var reconnect = Self.started()
        reconnect.activated(.direct, now: Self.second)
        reconnect.lost(now: 10 * Self.second)
        reconnect.activated(.direct, now: 10 * Self.second + 1)
        #expect(reconnect.lastChangeAt == nil)
    }

    @Test func failedRelayDialsBackOffUpTo30SecondsAndStartOverOnceOneWorked() {
        var choice = Self.started()
        var now = Self.second
        var waits: [UInt64] = []
        for _ in 0 ..< 7 {
            #expect(choice.tick(now: now, relayAvailable: true) == .dialRelay)
            choice.relayDialEnded(now: now, failed: true)
            var next = now
            while choice.tick(now: next, relayAvailable: true) == .none { next += Self.second / 10 }
            waits.append((next - now) / (Self.second / 10))
            choice.relayDialEnded(now: next, failed: true)
            now = next + 100 * Self.second
        }
        #expect(waits.allSatisfy { $0 >= 10 && $0 <= 300 }, "waits in 100 ms: \(waits)")
        #expect(waits.last == 300, "capped at 30 s: \(waits)")
        // A dial that was not needed (a direct channel came up meanwhile) waits for nothing.
        var fresh = Self.started()
        #expect(fresh.tick(now: 2 * Self.second, relayAvailable: true) == .dialRelay)
        fresh.relayDialEnded(now: 2 * Self.second, failed: false)
        #expect(fresh.tick(now: 2 * Self.second, relayAvailable: true) == .dialRelay)
    }
}
