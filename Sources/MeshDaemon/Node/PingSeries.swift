import MeshCore

/// One `meshctl ping`: `count` probes (clamped to 1…10 000) over each path in turn, while the
/// peer's channel stays up, summarised per path. The node sends the probes and waits for
/// their replies; this type only decides how many and shapes the report.
struct PingSeries {
    /// Probes per path.
    let probes: Int

    init(count: Int) { probes = min(max(count, 1), 10_000) }

    /// Runs the series on the caller's actor: `isActive` is asked before each probe (the
    /// channel may close meanwhile), `probe` returns a round trip in nanoseconds, or nil
    /// when no reply came in time.
    func run(isolation: isolated (any Actor)? = #isolation, isActive: () -> Bool,
             probe: (PingPath) async -> UInt64?) async -> [PingPathReport] {
        var reports: [PingPathReport] = []
        for path in PingPath.allCases {
            var samples: [Double] = []
            var sent = 0
            for _ in 0..<probes where isActive() {
                sent += 1
                if let nanoseconds = await probe(path) { samples.append(Double(nanoseconds) / 1000) }
            }
            reports.append(Self.report(path, sent: sent, microseconds: samples))
        }
        return reports
    }

    /// The report of one path: `sent` probes, the round trips (µs) of those answered.
    static func report(_ path: PingPath, sent: Int, microseconds samples: [Double]) -> PingPathReport {
        let summary = RoundTripSummary(samples)
        return PingPathReport(path: path, sent: sent, received: samples.count,
                              minMicroseconds: summary?.minimum, p50Microseconds: summary?.p50,
                              p99Microseconds: summary?.p99, maxMicroseconds: summary?.maximum)
    }
}
