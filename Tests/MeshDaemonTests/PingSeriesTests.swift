import MeshCore
import Testing
@testable import MeshDaemon

/// How many probes `meshctl ping` sends per path and what it reports, without a node.
@Suite("Ping series")
struct PingSeriesTests {
    @Test("the count is clamped to 1…10 000", arguments: [(-5, 1), (0, 1), (3, 3), (10_000, 10_000), (50_000, 10_000)])
    func clamps(count: Int, probes: Int) {
        #expect(PingSeries(count: count).probes == probes)
    }

    @Test("each path gets its probes in turn; unanswered ones count as sent, not received")
    func bothPaths() async {
        var asked: [PingPath] = []
        let reports = await PingSeries(count: 3).run(isActive: { true }) { path in
            asked.append(path)
            return asked.count % 3 == 0 ? nil : UInt64(asked.count) * 1000
        }
        #expect(asked == [.datagram, .datagram, .datagram, .stream, .stream, .stream])
        #expect(reports.map(\.path) == [.datagram, .stream])
        #expect(reports.map(\.sent) == [3, 3])
        #expect(reports.map(\.received) == [2, 2])
        #expect(reports.first?.minMicroseconds == 1)
        #expect(reports.first?.maxMicroseconds == 2)
        #expect(reports.last?.minMicroseconds == 4)
    }

    @Test("once the channel closes no further probe is sent")
    func stopsWhenChannelCloses() async {
        var sent = 0
        let reports = await PingSeries(count: 10).run(isActive: { sent < 4 }) { _ in
            sent += 1
            return 500
        }
        #expect(sent == 4)
        #expect(reports.map(\.sent) == [4, 0])
        #expect(reports.last?.minMicroseconds == nil)
    }
}
