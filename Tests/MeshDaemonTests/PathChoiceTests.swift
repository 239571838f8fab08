@testable import MeshDaemon
import Testing

/// Direct preferred, the relay within 2 s when no direct path works, back to direct once one
/// authenticated, at most one change per 30 s when paths flap — on virtual time.
@Suite("Path choice: direct or relay")
struct PathChoiceTests {
    static let second: UInt64 = 1_000_000_000

    @Test func aDirectPathThatAuthenticatesIsUsedAndTheRelayIsNeverDialled() {
        var choice = PathChoice(relayConfigured: true, now: 0)
        #expect(choice.directAuthenticated(now: Self.second / 2) == .use(.direct))
        for tick in 1 ... 120 { #expect(choice.tick(now: UInt64(tick) * Self.second) == .none) }
        #expect(choice.current == .direct)
    }

    @Test func withNoDirectPathTheRelayIsDialledAfterTwoSecondsAndUsedOnceItAuthenticates() {
        var choice = PathChoice(relayConfigured: true, now: 0)
        #expect(choice.tick(now: 1_900_000_000) == .none)
        #expect(choice.tick(now: 2 * Self.second) == .dialRelay)
        #expect(choice.tick(now: 3 * Self.second) == .none, "one relay dial at a time")
        #expect(choice.relayAuthenticated(now: 3 * Self.second) == .use(.relay))
        #expect(choice.current == .relay)
    }

    @Test func aLostDirectChannelGoesToTheRelayTwoSecondsLater() {
        var choice = PathChoice(relayConfigured: true, now: 0)
        _ = choice.directAuthenticated(now: 0)
        #expect(choice.directLost(now: 100 * Self.second) == .none)
        #expect(choice.current == nil)
        #expect(choice.tick(now: 101 * Self.second) == .none)
        #expect(choice.tick(now: 102 * Self.second) == .dialRelay)
        #expect(choice.relayAuthenticated(now: 102 * Self.second) == .use(.relay))
    }

    @Test func withoutARelayNothingButDirectIsTried() {
        var choice = PathChoice(relayConfigured: false, now: 0)
        for tick in 0 ... 60 { #expect(choice.tick(now: UInt64(tick) * Self.second) == .none) }
        #expect(choice.directAuthenticated(now: 61 * Self.second) == .use(.direct))
    }

    @Test func onTheRelayADirectPathThatAuthenticatesTakesOver() {
        var choice = PathChoice(relayConfigured: true, now: 0)
        _ = choice.tick(now: 2 * Self.second)
        _ = choice.relayAuthenticated(now: 3 * Self.second)
        #expect(choice.directAuthenticated(now: 4 * Self.second) == .use(.direct))
        #expect(choice.current == .direct)
        // The relay going away afterwards changes nothing.
        #expect(choice.relayLost(now: 5 * Self.second) == .none)
        #expect(choice.current == .direct)
    }

    @Test func flappingPathsChangeTheChannelAtMostOncePer30Seconds() {
        var choice = PathChoice(relayConfigured: true, now: 0)
        _ = choice.tick(now: 2 * Self.second)
        _ = choice.relayAuthenticated(now: 2 * Self.second)
        // A change from the relay to direct at 10 s.
        #expect(choice.directAuthenticated(now: 10 * Self.second) == .use(.direct))
        // Direct fails at 12 s while the relay still works: the only working path is used at once.
        #expect(choice.directLost(now: 12 * Self.second) == .use(.relay))
        // Direct authenticates again at 15 s: held until 30 s after the last change (40 s).
        #expect(choice.directAuthenticated(now: 15 * Self.second) == .none)
        #expect(choice.current == .relay)
        #expect(choice.tick(now: 39 * Self.second) == .none)
        #expect(choice.tick(now: 40 * Self.second) == .use(.direct))
        // The next flap within 30 s is held again, and a held switch is dropped when its path
        // fails meanwhile.
        #expect(choice.relayLost(now: 41 * Self.second) == .none)
        #expect(choice.relayAuthenticated(now: 42 * Self.second) == .none)
        #expect(choice.directLost(now: 43 * Self.second) == .use(.relay))
        #expect(choice.directAuthenticated(now: 44 * Self.second) == .none)
        #expect(choice.directLost(now: 50 * Self.second) == .none)
        #expect(choice.tick(now: 80 * Self.second) == .none)
        #expect(choice.current == .relay)
    }

    @Test func aFailedRelayDialIsAskedForAgainAtOnceTheDialersBackoffSpacesThem() {
        var choice = PathChoice(relayConfigured: true, now: 0)
        #expect(choice.tick(now: 2 * Self.second) == .dialRelay)
        #expect(choice.relayLost(now: 3 * Self.second) == .dialRelay)
    }
}
