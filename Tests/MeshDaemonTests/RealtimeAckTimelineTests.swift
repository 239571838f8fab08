import Foundation
import Testing
@testable import MeshDaemon

/// The order the ack watchdog sees realtime deadlines in, whatever order they were registered.
@Suite("Realtime ack timeline")
struct RealtimeAckTimelineTests {
    @Test func aShortDeadlineRegisteredAfterALongOneComesFirst() {
        var timeline = RealtimeAckTimeline()
        // Peer Y: 500 ms; then peer X: 20 ms, registered 1 ms later.
        let y = UUID(), x = UUID()
        timeline.insert(y, deadline: 500_000_000)
        timeline.insert(x, deadline: 21_000_000)
        #expect(timeline.earliest?.eventID == x)
        timeline.removeEarliest()
        #expect(timeline.earliest?.eventID == y)
        timeline.removeEarliest()
        #expect(timeline.isEmpty && timeline.earliest == nil)
    }

    @Test func deadlinesInOrderStayInTheFIFOAndTiesKeepTheirOrder() {
        var timeline = RealtimeAckTimeline()
        let ids = (0..<5).map { _ in UUID() }
        for (index, id) in ids.enumerated() { timeline.insert(id, deadline: 100 + UInt64(index / 2)) }
        var order: [UUID] = []
        while let next = timeline.earliest {
            order.append(next.eventID)
            timeline.removeEarliest()
        }
        #expect(order == ids)
    }

    /// Many peers with their own (and changing) deadlines: always earliest first, also across
    /// the FIFO's compaction and when entries keep coming while others are taken.
    @Test func randomDeadlinesComeOutSorted() {
        let seed = SeededGenerator.seed(for: "randomDeadlinesComeOutSorted")
        var random = SeededGenerator(seed: seed)
        var timeline = RealtimeAckTimeline()
        var expected: [UInt64] = []
        var clock: UInt64 = 0
        for round in 0..<20 {
            for _ in 0..<Int.random(in: 1...600, using: &random) {
                clock += UInt64.random(in: 0...1_000, using: &random)
                let deadline = clock + [20_000_000, 500_000_000, UInt64.random(in: 20_000_000...500_000_000, using: &random)]
                    .randomElement(using: &random)!
                timeline.insert(UUID(), deadline: deadline)
                expected.append(deadline)
            }
            expected.sort()
            // Take what expired by now (a watchdog wake-up), or everything in the last round.
            let now = round == 19 ? UInt64.max : clock + UInt64.random(in: 0...300_000_000, using: &random)
            while let next = timeline.earliest, next.deadline <= now {
                timeline.removeEarliest()
                #expect(next.deadline == expected.removeFirst(), "seed \(seed)")
            }
            #expect(timeline.count == expected.count, "seed \(seed)")
        }
        #expect(timeline.isEmpty && expected.isEmpty, "seed \(seed)")
    }
}
