import Foundation

/// CPU time per message of each phase of `mesh-bench delivery`: both daemons and this process
/// (the two apps), so a figure can be compared across runs on a busy machine.
struct CPUMeter {
    let a: BenchDaemon
    let b: BenchDaemon
    private var last: (a: Double, b: Double, apps: Double)

    init(a: BenchDaemon, b: BenchDaemon) {
        self.a = a
        self.b = b
        last = (a.cpuSeconds() ?? 0, b.cpuSeconds() ?? 0, Self.ownSeconds())
    }

    /// CPU used since the previous lap, per message, as text; starts the next lap.
    mutating func lap(messages: Int) -> String {
        let now = (a: a.cpuSeconds() ?? 0, b: b.cpuSeconds() ?? 0, apps: Self.ownSeconds())
        defer { last = now }
        func per(_ seconds: Double) -> String { String(format: "%.1f µs", seconds * 1e6 / Double(max(1, messages))) }
        return "A \(per(now.a - last.a)), B \(per(now.b - last.b)), apps \(per(now.apps - last.apps))"
    }

    /// This process's user + system CPU time, seconds.
    static func ownSeconds() -> Double {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }
}
