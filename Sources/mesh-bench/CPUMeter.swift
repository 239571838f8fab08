import Foundation

/// CPU time per message of each phase of `mesh-bench delivery`: both daemons and this process
/// (the two apps), so a figure can be compared across runs on a busy machine.
struct CPUMeter {
    let a: BenchDaemon
    let b: BenchDaemon
    private var last: (a: Double, b: Double, apps: Double, switches: Int)

    init(a: BenchDaemon, b: BenchDaemon) {
        self.a = a
        self.b = b
        last = (a.cpuSeconds() ?? 0, b.cpuSeconds() ?? 0, Self.ownSeconds(), Self.ownSwitches())
    }

    /// CPU used since the previous lap, per message, as text; starts the next lap.
    mutating func lap(messages: Int) -> String {
        let now = (a: a.cpuSeconds() ?? 0, b: b.cpuSeconds() ?? 0, apps: Self.ownSeconds(), switches: Self.ownSwitches())
        defer { last = now }
        func per(_ seconds: Double) -> String { String(format: "%.1f µs", seconds * 1e6 / Double(max(1, messages))) }
        let switches = String(format: "%.2f", Double(now.switches - last.switches) / Double(max(1, messages)))
        return "A \(per(now.a - last.a)), B \(per(now.b - last.b)), apps \(per(now.apps - last.apps)) (\(switches) thread sleeps in the apps)"
    }

    /// How often this process's threads went to sleep (voluntary context switches of every
    /// thread, from /proc/self/task/*/status): each is a wake-up to come.
    static func ownSwitches() -> Int {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.reduce(0) { total, task in
            guard let status = try? String(contentsOfFile: "/proc/self/task/\(task)/status", encoding: .utf8),
                  let line = status.split(separator: "\n").first(where: { $0.hasPrefix("voluntary_ctxt_switches:") }),
                  let count = Int(line.split(separator: ":").last?.trimmingCharacters(in: .whitespaces) ?? "") else { return total }
            return total + count
        }
    }

    /// This process's user + system CPU time, seconds.
    static func ownSeconds() -> Double {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }
}
