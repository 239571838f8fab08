import Foundation

/// CPU time per message of each phase of `mesh-bench delivery`: both daemons and this process
/// (the two apps), so a figure can be compared across runs on a busy machine.
struct CPUMeter {
    let a: BenchDaemon
    let b: BenchDaemon
    private var last: (a: CPUTime, b: CPUTime, apps: CPUTime, switches: Int)
    /// Each daemon's CPU per message in the last lap, µs.
    private(set) var lastPerMessage = (a: 0.0, b: 0.0)

    init(a: BenchDaemon, b: BenchDaemon) {
        self.a = a
        self.b = b
        last = (a.cpuSeconds() ?? CPUTime(), b.cpuSeconds() ?? CPUTime(), Self.ownSeconds(), Self.ownSwitches())
    }

    /// CPU used since the previous lap, per message (the kernel's share in brackets), as text;
    /// starts the next lap.
    mutating func lap(messages: Int) -> String {
        let now = (a: a.cpuSeconds() ?? CPUTime(), b: b.cpuSeconds() ?? CPUTime(), apps: Self.ownSeconds(), switches: Self.ownSwitches())
        defer { last = now }
        func per(_ seconds: Double) -> Double { seconds * 1e6 / Double(max(1, messages)) }
        func text(_ used: CPUTime, _ before: CPUTime) -> String {
            String(format: "%.1f µs (system %.1f)", per(used.total - before.total), per(used.system - before.system))
        }
        let switches = String(format: "%.2f", Double(now.switches - last.switches) / Double(max(1, messages)))
        lastPerMessage = (per(now.a.total - last.a.total), per(now.b.total - last.b.total))
        return "A \(text(now.a, last.a)), B \(text(now.b, last.b)), apps \(text(now.apps, last.apps)) (\(switches) thread sleeps in the apps)"
    }

    /// The last lap in ARCHITECTURE §10's unit, messages per second per core: how many
    /// messages each daemon would carry with one core of its own at the CPU it spent per
    /// message (1 s ÷ µs per message). A derived figure, shown next to the measured end-to-end
    /// rate, which here shares two vCPUs among both daemons and both apps.
    func perCore() -> String {
        func rate(_ micros: Double) -> String { micros > 0 ? String(format: "%.0f", 1e6 / micros) : "?" }
        return "A \(rate(lastPerMessage.a)), B \(rate(lastPerMessage.b)) msgs/s per core of CPU"
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

    /// This process's user and system CPU time.
    static func ownSeconds() -> CPUTime {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
        return CPUTime(user: seconds(usage.ru_utime), system: seconds(usage.ru_stime))
    }
}

/// CPU time of a process, seconds.
struct CPUTime {
    var user = 0.0
    var system = 0.0
    var total: Double { user + system }
}
