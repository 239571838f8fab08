import Foundation
import Testing
@testable import MeshDaemon

/// Which outbox items go to a peer's mailbox and when: each once per round, several per box,
/// within the round's caps, again after the resend delay or when the broker lost its session,
/// and an item too large for a box waits for a live channel.
@Suite("Mailbox post state")
struct MailboxPostStateTests {
    static let second: UInt64 = 1_000_000_000

    static func entries(_ sequences: ClosedRange<UInt64>, payload: Int = 10) -> [OutboxEntry] {
        sequences.map { sequence in
            OutboxEntry(id: OutboxID(rawValue: Int64(sequence)), peer: "p", sequence: sequence,
                        item: OutboxItem(eventID: UUID(), featureID: "demo", kind: 2, payload: Array(repeating: 7, count: payload),
                                         createdAt: Date(timeIntervalSince1970: 0)),
                        attempts: 0, lastAttemptAt: nil)
        }
    }

    /// Runs one pass at `now` over `outbox` the way the courier does; returns the posted boxes' sequences.
    static func pass(_ state: inout MailboxPostState, _ outbox: [OutboxEntry], now: UInt64, epoch: UInt64 = 1,
                     maximumPlaintext: Int = 65_466) -> [[UInt64]]? {
        guard let read = state.beginPass(now: now, epoch: epoch) else { return nil }
        let page = Array(outbox.filter { $0.sequence > read.after }.prefix(read.limit))
        var boxes: [[UInt64]] = []
        for step in state.plan(page, maximumPlaintext: maximumPlaintext) {
            switch step {
            case .box(let items, _):
                boxes.append(items.map(\.sequence))
                state.posted(step)
            case .tooLarge(let sequence):
                state.skipped(sequence)
            }
        }
        state.endPass(now: now, readWasFull: page.count >= read.limit, postFailed: false)
        return boxes
    }

    @Test func eachItemIsPostedOncePerRoundAndManyShareABox() throws {
        var state = MailboxPostState()
        let outbox = Self.entries(1...100)
        let first = try #require(Self.pass(&state, outbox, now: 0))
        #expect(first == [Array(1...100)], "100 small items fit one box")
        #expect(Self.pass(&state, outbox, now: 1) == nil, "the next pass waits the idle pause")
        #expect(Self.pass(&state, outbox, now: 3 * Self.second) == [], "nothing is posted twice in a round")
        let more = outbox + Self.entries(101...103)
        #expect(Self.pass(&state, more, now: 6 * Self.second)?.flatMap { $0 } == [101, 102, 103], "new items join the round")
    }

    @Test func boxesSplitAtTheirPlaintextLimitAndOversizedItemsWait() throws {
        var state = MailboxPostState()
        // Each item is 8 + 16 + 1 + 2 + 4 + 1 + 4 + 1000 = 1036 bytes; a 3000-byte box holds two.
        let outbox = Self.entries(1...5, payload: 1_000) + Self.entries(6...6, payload: 5_000) + Self.entries(7...7, payload: 1_000)
        let boxes = try #require(Self.pass(&state, outbox, now: 0, maximumPlaintext: 3_000))
        #expect(boxes == [[1, 2], [3, 4], [5], [7]])
        #expect(state.cursor == 7)
    }

    @Test func theRoundIsCappedAndAcksMakeRoom() throws {
        var state = MailboxPostState()
        let outbox = Self.entries(1...UInt64(MailboxPostState.maximumItems + 200))
        var posted: [UInt64] = []
        var now: UInt64 = 0
        for _ in 0..<10 {
            posted += Self.pass(&state, outbox, now: now)?.flatMap { $0 } ?? []
            now += 3 * Self.second
        }
        #expect(posted == Array(1...UInt64(MailboxPostState.maximumItems)), "no more than the cap is unacknowledged")
        state.acked(outbox.prefix(100).map(\.item.eventID))
        let after = Self.pass(&state, outbox, now: now)?.flatMap { $0 } ?? []
        #expect(after == Array(UInt64(MailboxPostState.maximumItems + 1)...UInt64(MailboxPostState.maximumItems + 100)))
    }

    @Test func unacknowledgedItemsArePostedAgainAfterTheResendDelayOrANewBrokerSession() throws {
        var state = MailboxPostState()
        let outbox = Self.entries(1...3)
        #expect(Self.pass(&state, outbox, now: 0)?.flatMap { $0 } == [1, 2, 3])
        state.acked([outbox[0].item.eventID])
        let remaining = Array(outbox.dropFirst())
        #expect(Self.pass(&state, remaining, now: 100 * Self.second) == [])
        let resend = UInt64(MailboxPostState.resendSeconds) * Self.second
        #expect(Self.pass(&state, remaining, now: resend)?.flatMap { $0 } == [2, 3], "posted again after the resend delay")
        #expect(Self.pass(&state, remaining, now: resend + 3 * Self.second, epoch: 2)?.flatMap { $0 } == [2, 3],
                "posted again when the broker no longer held the session")
        state.channelActive()
        #expect(Self.pass(&state, remaining, now: resend + 6 * Self.second, epoch: 2)?.flatMap { $0 } == [2, 3],
                "posted again once a live channel came and went")
    }

    @Test func aPassRunsAtATime() {
        var state = MailboxPostState()
        #expect(state.beginPass(now: 0, epoch: 1) != nil)
        #expect(state.beginPass(now: 0, epoch: 1) == nil)
        state.endPass(now: 0, readWasFull: true, postFailed: false)
        #expect(state.beginPass(now: 0, epoch: 1) != nil, "a full read goes on at once")
        state.endPass(now: 0, readWasFull: true, postFailed: true)
        #expect(state.beginPass(now: 1, epoch: 1) == nil, "a failed post waits the idle pause")
    }
}
