import Foundation

/// The figures of a comparison between two systems over several interleaved rounds: every run
/// of every figure as it is measured, and at the end each figure's median per system, every
/// run's value and the ratio of the medians (first system ÷ second).
struct ComparisonTable {
    enum Unit {
        case micros, rate, seconds, count, microsPerMessage
        func text(_ value: Double) -> String {
            switch self {
            case .micros: String(format: "%.1f µs", value / 1000)
            case .rate: String(format: "%.1f k/s", value / 1000)
            case .seconds: String(format: "%.3f s", value)
            case .count: String(format: "%.0f", value)
            case .microsPerMessage: String(format: "%.2f µs/msg", value)
            }
        }
    }

    private struct Row {
        let name: String
        let unit: Unit
        var values: [[Double]]
    }

    let systems: [String]
    private var rows: [Row] = []

    init(systems: [String]) { self.systems = systems }

    /// Records (and prints) one run's value of `figure` (in ns for `.micros`) for `system`.
    mutating func add(_ figure: String, _ unit: Unit, system: Int, _ value: Double, round: Int) {
        if let index = rows.firstIndex(where: { $0.name == figure }) {
            rows[index].values[system].append(value)
        } else {
            var values = [[Double]](repeating: [], count: systems.count)
            values[system].append(value)
            rows.append(Row(name: figure, unit: unit, values: values))
        }
        print("  round \(round + 1), \(systems[system]): \(figure) \(unit.text(value))")
    }

    /// The median of `figure` for `system`, nil when never measured.
    func median(_ figure: String, system: Int) -> Double? {
        guard let row = rows.first(where: { $0.name == figure }), !row.values[system].isEmpty else { return nil }
        return Self.median(row.values[system])
    }

    func printSummary() {
        print("== medians (every run in brackets); ratio = \(systems[0]) ÷ \(systems.count > 1 ? systems[1] : "?") ==")
        for row in rows {
            var parts: [String] = []
            for (index, system) in systems.enumerated() where !row.values[index].isEmpty {
                parts.append("\(system) \(row.unit.text(Self.median(row.values[index]))) [\(row.values[index].map(row.unit.text).joined(separator: ", "))]")
            }
            var line = "  \(row.name): " + parts.joined(separator: "; ")
            if row.values.count > 1, !row.values[0].isEmpty, !row.values[1].isEmpty {
                let ratio = Self.median(row.values[0]) / max(Self.median(row.values[1]), 1e-12)
                line += String(format: "; ratio %.2f", ratio)
            }
            print(line)
        }
    }

    static func median(_ values: [Double]) -> Double {
        guard !values.isEmpty else { return 0 }
        let sorted = values.sorted()
        return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }

    /// The `p` quantile of nanosecond samples.
    static func percentile(_ samples: [UInt64], _ p: Double) -> Double { DeliveryBenchmark.percentile(samples, p) }
}

/// CPU time of a set of processes over a phase: call `start()` before, `perMessage` after.
struct PhaseCPU {
    let sources: [() -> CPUTime?]
    private var before = 0.0
    private var ownBefore = 0.0

    init(_ sources: [() -> CPUTime?]) { self.sources = sources }

    private func total() -> Double { sources.reduce(0) { $0 + ($1()?.total ?? 0) } }

    mutating func start() {
        before = total()
        ownBefore = CPUMeter.ownSeconds().total
    }

    /// Microseconds of CPU per message of the processes, and of this process (the apps).
    func perMessage(_ messages: Int) -> (agents: Double, apps: Double) {
        let n = Double(max(1, messages))
        return ((total() - before) * 1e6 / n, (CPUMeter.ownSeconds().total - ownBefore) * 1e6 / n)
    }
}
