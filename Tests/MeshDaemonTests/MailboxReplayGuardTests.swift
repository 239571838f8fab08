import Testing
@testable import MeshDaemon

/// A mailbox box is taken at most once whatever the broker replays, the guard stays bounded,
/// and the sender's counters keep increasing.
@Suite("Mailbox replay guard")
struct MailboxReplayGuardTests {
    @Test func aCounterIsTakenOnceInAnyOrder() {
        var guardian = MailboxReplayGuard()
        for counter in [5, 3, 9, 4] as [UInt64] {
            #expect(guardian.check(counter) == .fresh)
            guardian.accept(counter)
            #expect(guardian.check(counter) == .replayed)
        }
        #expect(guardian.taken == [3, 4, 5, 9])
        #expect(guardian.check(0) == .tooOld)
        #expect(guardian.check(6) == .fresh)
    }

    @Test func pastCapacityTheFloorRisesAndTheStateStaysBounded() {
        var guardian = MailboxReplayGuard()
        for counter in 1...UInt64(MailboxReplayGuard.capacity + 10) { guardian.accept(counter * 10) }
        #expect(guardian.taken.count == MailboxReplayGuard.capacity)
        #expect(guardian.floor == 100)
        #expect(guardian.check(100) == .tooOld)
        #expect(guardian.check(95) == .tooOld)
        #expect(guardian.check(105) == .fresh, "a late box above the floor is still taken")
        #expect(guardian.check(110) == .replayed)
    }

    @Test func theFloorOnlyRises() {
        var guardian = MailboxReplayGuard(floor: 50)
        guardian.accept(60)
        guardian.accept(70)
        guardian.raiseFloor(to: 65)
        #expect(guardian.taken == [70])
        guardian.raiseFloor(to: 10)
        #expect(guardian.floor == 65)
        #expect(guardian.check(60) == .tooOld)
    }

    @Test func senderCountersIncreaseEvenWhenTheClockStandsOrGoesBack() {
        var counter = MailboxCounter()
        #expect(counter.next(wallNanoseconds: 1_000) == 1_000)
        #expect(counter.next(wallNanoseconds: 1_000) == 1_001)
        #expect(counter.next(wallNanoseconds: 500) == 1_002)
        #expect(counter.next(wallNanoseconds: 9_000) == 9_000)
        #expect(counter.next(wallNanoseconds: -4) == 9_001)
    }
}
