import Foundation
import Testing
@testable import MeshDaemon

/// Which latest-state slots go to a peer's mailbox and when: each revision once per round, never
/// one the peer acknowledged, within the per-slot and per-peer box bounds, and again after the
/// resend delay or when the broker lost its session.
@Suite("Mailbox snapshot post state")
struct MailboxSnapshotPostStateTests {
    typealias State = MailboxSnapshotPostState
    static let second: UInt64 = 1_000_000_000
    static let session = UUID(uuidString: "01234567-89AB-CDEF-0123-456789ABCDEF")!

    static func slot(_ revision: UInt64, feature: String = "demo") -> State.SlotRevision {
        State.SlotRevision(key: .init(featureID: feature, sessionID: session), revision: revision)
    }

    /// One pass at `now` the way the courier runs it; returns the revisions posted.
    static func pass(_ state: inout State, _ slots: [State.SlotRevision], now: UInt64, epoch: UInt64 = 1,
                     bytes: Int = 100) -> [UInt64]? {
        guard state.beginPass(now: now, epoch: epoch) else { return nil }
        var posted: [UInt64] = []
        for slot in state.plan(slots, now: now) where state.hasRoom(forBytes: bytes) {
            state.posted(slot, bytes: bytes, now: now)
            posted.append(slot.revision)
        }
        state.endPass(now: now)
        return posted
    }

    @Test func eachRevisionIsPostedOncePerRoundAndAnAckedOneNeverAgain() {
        var state = State()
        #expect(Self.pass(&state, [Self.slot(1)], now: 0) == [1])
        #expect(Self.pass(&state, [Self.slot(1)], now: Self.second) == nil, "passes are 2 s apart")
        #expect(Self.pass(&state, [Self.slot(1)], now: 2 * Self.second) == [], "posted in this round already")
        #expect(Self.pass(&state, [Self.slot(2)], now: 4 * Self.second) == [2], "a new revision goes out")
        state.acked([Self.slot(2).ackID])
        #expect(state.outstandingBoxes == 0, "an ack of revision 2 also covers the box of revision 1")
        #expect(Self.pass(&state, [Self.slot(2)], now: 700 * Self.second) == [], "acked: not posted in a new round")
        #expect(Self.pass(&state, [Self.slot(2)], now: 702 * Self.second, epoch: 2) == [], "nor after the broker lost its session")
    }

    @Test func anUnacknowledgedSlotIsPostedAgainAfterTheResendDelayOrANewBrokerSession() {
        var state = State()
        #expect(Self.pass(&state, [Self.slot(5)], now: 0) == [5])
        #expect(Self.pass(&state, [Self.slot(5)], now: 300 * Self.second) == [])
        #expect(Self.pass(&state, [Self.slot(5)], now: 600 * Self.second) == [5], "a new round after 600 s")
        #expect(state.outstandingBoxes == 2)
        #expect(Self.pass(&state, [Self.slot(5)], now: 602 * Self.second, epoch: 2) == [5], "the broker lost the boxes")
        #expect(state.outstandingBoxes == 1)
        state.channelActive()
        #expect(Self.pass(&state, [Self.slot(6)], now: 604 * Self.second, epoch: 2) == [6])
    }

    @Test func boxesAreBoundedPerSlotAndPerPeer() {
        var state = State()
        var now: UInt64 = 0
        for revision in 1...20 as ClosedRange<UInt64> {
            _ = Self.pass(&state, [Self.slot(revision)], now: now)
            now += 2 * Self.second
        }
        // Revisions 1…8 went out at once (0…14 s); 9…20 came every 2 s after that, less than
        // 30 s after the 8th: the slot waits.
        #expect(state.outstandingBoxes == State.maximumBoxesPerSlot, "8 boxes of one slot at once")
        #expect(Self.pass(&state, [Self.slot(21)], now: now) == [], "26 s after the last box of the slot")
        #expect(Self.pass(&state, [Self.slot(21)], now: now + 4 * Self.second) == [21], "the latest goes out 30 s after the last")
        #expect(Self.pass(&state, [Self.slot(22)], now: now + 6 * Self.second) == [], "then one per 30 s")
        state.acked([Self.slot(3).ackID])
        #expect(state.outstandingBoxes == State.maximumBoxesPerSlot + 1 - 3, "an ack frees the revisions up to it")
        #expect(Self.pass(&state, [Self.slot(22)], now: now + 8 * Self.second) == [22], "room again: the latest revision goes out at once")

        var many = State()
        let slots = (0..<(State.maximumBoxes + 10)).map { Self.slot(1, feature: "f\($0)") }
        #expect(Self.pass(&many, slots, now: 0)?.count == State.maximumBoxes, "1024 boxes per peer")
        var large = State()
        #expect(Self.pass(&large, slots, now: 0, bytes: 60_000)?.count == State.maximumBytes / 60_000, "16 MiB per peer")
    }

    @Test func theLatestAcknowledgedIDsAreRememberedWithinTheirBound() {
        var state = State()
        state.acked([Self.slot(1).ackID])
        state.acked((0..<State.rememberedAcks - 1).map { _ in UUID() })
        #expect(Self.pass(&state, [Self.slot(1)], now: 0) == [], "still remembered")
        state.acked([UUID()])
        #expect(Self.pass(&state, [Self.slot(1)], now: 2 * Self.second) == [1], "forgotten after 4096 newer IDs: posted again")
    }
}
