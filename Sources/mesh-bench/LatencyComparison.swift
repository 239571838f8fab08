import Foundation

/// `mesh-bench compare OTHER_MESHD`: realtime one-way latency, then realtime and reliable
/// throughput (`ThroughputComparison`), with lean apps through two pairs of daemons running at
/// the same time — this build's `meshd` (next to mesh-bench) and `OTHER_MESHD` — one message
/// (or one burst) through each pair in turn.
///
/// On a shared VM the latency of one minute can differ from the next by more than a change to
/// meshd does; two runs one after the other then compare the minutes, not the builds. Here both
/// builds see the same minutes: each round sends one message through each pair (their order
/// alternating per round), and the figures include the per-round difference.
enum LatencyComparison {
    struct Settings {
        var other = ""
        var rounds = 20_000
        var payloadBytes = 128
        var throughput = ThroughputComparison.Settings()
    }

    static func run(arguments: [String]) {
        guard let settings = parse(arguments) else {
            print("""
                usage: mesh-bench compare OTHER_MESHD [--rounds N] [--payload BYTES] [--bursts N] [--realtime N] [--reliable N]
                  OTHER_MESHD  the meshd build to compare with this one's (the meshd next to mesh-bench)
                  --rounds     latency: messages through each pair, one at a time, alternating (default 20000)
                  --payload    payload bytes (default 128)
                  --bursts     throughput: rounds of one realtime and one reliable burst through each pair,
                               alternating (default 5; 0 measures latency only)
                  --realtime   messages per realtime burst (default 50000)
                  --reliable   messages per reliable burst, durable at both ends and acked (default 10000)
                """)
            exit(2)
        }
        BenchMain.runToCompletion("compare") { try await measure(settings) }
    }

    static func parse(_ arguments: [String]) -> Settings? {
        var settings = Settings()
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            if !argument.hasPrefix("--") {
                guard settings.other.isEmpty else { return nil }
                settings.other = argument
                index += 1
                continue
            }
            guard index + 1 < arguments.count, let value = Int(arguments[index + 1]), value >= 0, value <= 10_000_000 else { return nil }
            switch argument {
            case "--rounds" where value > 0: settings.rounds = value
            case "--payload" where value > 0: settings.payloadBytes = max(8, value)
            case "--bursts": settings.throughput.rounds = value
            case "--realtime" where value > 0: settings.throughput.realtimeMessages = value
            case "--reliable" where value > 0: settings.throughput.reliableMessages = value
            default: return nil
            }
            index += 2
        }
        return settings.other.isEmpty ? nil : settings
    }

    static func measure(_ settings: Settings) async throws {
        let here = try BenchMain.meshdNextToBench().path
        guard FileManager.default.isExecutableFile(atPath: settings.other) else { throw BenchError("\(settings.other) is not an executable meshd") }
        let builds = [("this", here), ("other", settings.other)]
        var daemons: [BenchDaemon] = []
        defer { for daemon in daemons { daemon.stop() } }
        var pairs: [LeanAppPair] = []
        var sockets: [(sender: String, receiver: String)] = []
        defer { for pair in pairs { pair.close() } }
        for (label, executable) in builds {
            let a = try await BenchDaemon(name: "cmp-\(label)-a", executable: executable)
            daemons.append(a)
            let b = try await BenchDaemon(name: "cmp-\(label)-b", executable: executable)
            daemons.append(b)
            try await BenchMain.pair(a, b)
            pairs.append(try LeanAppPair(sender: a.socketPath, receiver: b.socketPath, payloadBytes: settings.payloadBytes))
            sockets.append((a.socketPath, b.socketPath))
        }
        print("mesh-bench compare: lean apps, \(settings.payloadBytes)-byte payloads, \(settings.rounds) rounds of one message through each pair in turn")
        print("  this:  \(here)")
        print("  other: \(settings.other)")
        // Each build's two daemons' CPU time: unlike wall time, it hardly depends on the load.
        let cpu: [() -> Double] = [0, 1].map { which in
            let (a, b) = (daemons[2 * which], daemons[2 * which + 1])
            return { (a.cpuSeconds()?.total ?? 0) + (b.cpuSeconds()?.total ?? 0) }
        }
        var samples: [[UInt64]] = [[], []]
        var cpuUsed = [0.0, 0.0]
        var differences: [Int64] = []
        var thisFaster = 0, notLive = [0, 0]
        for round in 0..<(settings.rounds + 200) {
            var got: [UInt64?] = [nil, nil]
            for which in (round % 2 == 0 ? [0, 1] : [1, 0]) {
                if round == 200 { cpuUsed[which] -= cpu[which]() }
                got[which] = try pairs[which].oneMessage(index: round)
            }
            guard round >= 200 else { continue }
            for which in 0..<2 {
                if let sample = got[which] { samples[which].append(sample) } else { notLive[which] += 1 }
            }
            if let mine = got[0], let theirs = got[1] {
                differences.append(Int64(mine) - Int64(theirs))
                if mine < theirs { thisFaster += 1 }
            }
        }
        for (which, (label, _)) in builds.enumerated() {
            let s = samples[which]
            print("  \(label): p50 \(micros(s, 0.50))  p90 \(micros(s, 0.90))  p99 \(micros(s, 0.99))  p999 \(micros(s, 0.999))   (\(s.count) live, \(notLive[which]) not live)")
        }
        let p50s = samples.map { DeliveryBenchmark.percentile($0, 0.50) }
        print("  p50 this ÷ other: " + String(format: "%.3f", p50s[0] / max(p50s[1], 1e-9)))
        for which in 0..<2 { cpuUsed[which] += cpu[which]() }
        ThroughputComparison.printCPU("realtime latency rounds", seconds: cpuUsed, messages: settings.rounds, labels: builds.map(\.0))
        let sorted = differences.sorted()
        func difference(_ p: Double) -> String {
            guard !sorted.isEmpty else { return "?" }
            return String(format: "%+.1f µs", Double(sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]) / 1000)
        }
        print("  this − other, per round: p10 \(difference(0.10))  p50 \(difference(0.50))  p90 \(difference(0.90));  this build faster in "
              + String(format: "%.1f %%", 100 * Double(thisFaster) / Double(max(1, differences.count))) + " of \(differences.count) rounds")
        guard settings.throughput.rounds > 0 else { return }
        var throughput = settings.throughput
        throughput.payloadBytes = settings.payloadBytes
        _ = try ThroughputComparison.measure(throughput, pairs: sockets, labels: builds.map(\.0), cpu: cpu)
    }

    private static func micros(_ samples: [UInt64], _ p: Double) -> String {
        DeliveryBenchmark.micros(DeliveryBenchmark.percentile(samples, p))
    }
}
