import Foundation
import SessionMesh

/// The throughput half of `mesh-bench compare`: realtime and reliable throughput with lean apps
/// (`BlockingThroughputProbe`) through two pairs of daemons, one burst through each pair in turn
/// (their order alternating per round), so both builds see the same minutes of the machine.
enum ThroughputComparison {
    struct Settings {
        var rounds = 5
        var realtimeMessages = 50_000
        var reliableMessages = 10_000
        var payloadBytes = 128
        var batch = 32
        var lead = 1_024
    }

    /// One kind of burst and what each build reached in each round (msgs/s at the receiving app).
    struct Series {
        let name: String
        var rates: [[Double]] = [[], []]
        /// Messages that did not arrive or whose send reply was not the expected outcome.
        var shortfalls = [0, 0]
        /// Sequences seen twice without the redelivery mark (must stay 0).
        var duplicates = [0, 0]
        /// CPU seconds both daemons of each build used during these bursts, and the messages sent.
        var cpuSeconds = [0.0, 0.0]
        var messages = 0
    }

    /// `pairs`: the (sender socket, receiver socket) of this build's pair and the other's; `cpu`:
    /// the CPU seconds each build's two daemons used so far.
    static func measure(_ settings: Settings, pairs: [(sender: String, receiver: String)], labels: [String],
                        cpu: [() -> Double]) throws -> [Series] {
        let kinds: [(name: String, mode: SessionDeliveryMode, count: Int)] = [
            ("realtime throughput", .realtimeBestEffort, settings.realtimeMessages),
            ("reliable throughput", .reliableEventually, settings.reliableMessages),
        ]
        print("throughput: lean apps, \(settings.rounds) rounds; each round one burst through each pair in turn — realtime "
              + "\(settings.realtimeMessages) messages, reliable \(settings.reliableMessages) (durable at both ends, acked by the app); "
              + "\(settings.batch) sends per write, ≤ \(settings.lead) unreceived")
        var series = kinds.map { Series(name: $0.name) }
        for round in 0..<settings.rounds {
            for (kindIndex, kind) in kinds.enumerated() {
                series[kindIndex].messages += kind.count
                for which in (round % 2 == 0 ? [0, 1] : [1, 0]) {
                    let cpuBefore = cpu[which]()
                    defer { series[kindIndex].cpuSeconds[which] += cpu[which]() - cpuBefore }
                    let probe = try BlockingThroughputProbe.run(
                        sender: pairs[which].sender, receiver: pairs[which].receiver, count: kind.count,
                        payloadBytes: settings.payloadBytes, batch: settings.batch, lead: settings.lead, mode: kind.mode,
                        feature: "bench-cmp-\(kindIndex)-\(round)")
                    let result = probe.throughput
                    series[kindIndex].rates[which].append(result.receivedPerSecond)
                    series[kindIndex].shortfalls[which] += result.missing + probe.notSent
                    series[kindIndex].duplicates[which] += result.duplicates
                }
            }
        }
        for entry in series {
            for (which, label) in labels.enumerated() {
                let rates = entry.rates[which]
                print("  \(entry.name), \(label): median \(rate(median(rates)))  (rounds: \(rates.map(rate).joined(separator: ", ")); "
                      + "\(entry.shortfalls[which]) missing or not accepted, \(entry.duplicates[which]) seen twice unmarked)")
            }
            let ratios = zip(entry.rates[0], entry.rates[1]).map { $0 / max($1, 1e-9) }
            print("  \(entry.name), this ÷ other: " + String(format: "%.3f", median(entry.rates[0]) / max(median(entry.rates[1]), 1e-9))
                  + " (medians); per round " + ratios.map { String(format: "%.3f", $0) }.joined(separator: ", "))
            printCPU(entry.name, seconds: entry.cpuSeconds, messages: entry.messages, labels: labels)
        }
        return series
    }

    /// Prints the daemons' CPU time per message of each build and this ÷ other: the figure to
    /// trust when the machine is loaded (wall-time figures then spread widely; CPU time per
    /// message hardly moves). /proc's clock ticks are 10 ms, so phases of seconds are exact enough.
    static func printCPU(_ name: String, seconds: [Double], messages: Int, labels: [String]) {
        guard messages > 0, seconds.count == 2, labels.count == 2 else { return }
        let perMessage = seconds.map { $0 * 1e6 / Double(messages) }
        print("  \(name), daemon CPU per message: " + zip(labels, perMessage).map { "\($0) " + String(format: "%.2f µs", $1) }
              .joined(separator: ", ") + ";  this ÷ other: " + String(format: "%.3f", perMessage[0] / max(perMessage[1], 1e-9)))
    }

    static func median(_ values: [Double]) -> Double {
        guard !values.isEmpty else { return 0 }
        let sorted = values.sorted()
        return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }

    static func rate(_ perSecond: Double) -> String { String(format: "%.1f k/s", perSecond / 1000) }
}
