import Foundation

/// CPU time per message of each phase of `mesh-bench delivery`: both daemons and this process
/// (the two apps), so a figure can be compared across runs on a busy machine.
struct CPUMeter {
    let a: BenchDaemon
    let b: BenchDaemon
    private var last: (a: CPUTime, b: CPUTime, apps: CPUTime, switches: Int, machine: MachineTicks?)
    /// Each daemon's CPU per message in the last lap, µs.
    private(set) var lastPerMessage = (a: 0.0, b: 0.0)

    init(a: BenchDaemon, b: BenchDaemon) {
        self.a = a
        self.b = b
        last = (a.cpuSeconds() ?? CPUTime(), b.cpuSeconds() ?? CPUTime(), Self.ownSeconds(), Self.ownSwitches(), MachineTicks.now())
    }

    /// CPU used since the previous lap, per message (the kernel's share in brackets), as text,
    /// and the share of the machine's CPU time the hypervisor took; starts the next lap.
    mutating func lap(messages: Int) -> String {
        let now = (a: a.cpuSeconds() ?? CPUTime(), b: b.cpuSeconds() ?? CPUTime(), apps: Self.ownSeconds(), switches: Self.ownSwitches(),
                   machine: MachineTicks.now())
        defer { last = now }
        func per(_ seconds: Double) -> Double { seconds * 1e6 / Double(max(1, messages)) }
        func text(_ used: CPUTime, _ before: CPUTime) -> String {
            String(format: "%.1f µs (system %.1f)", per(used.total - before.total), per(used.system - before.system))
        }
        let switches = String(format: "%.2f", Double(now.switches - last.switches) / Double(max(1, messages)))
        lastPerMessage = (per(now.a.total - last.a.total), per(now.b.total - last.b.total))
        var stolen = ""
        if let before = last.machine, let after = now.machine, let share = after.stealShare(since: before) {
            stolen = String(format: "; steal %.0f %% of the machine's CPU time", share * 100)
        }
        return "A \(text(now.a, last.a)), B \(text(now.b, last.b)), apps \(text(now.apps, last.apps)) (\(switches) thread sleeps in the apps)\(stolen)"
    }

    /// The last lap as messages per second per core (the unit of the realtime throughput target, docs/BENCHMARKS.md): how many
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

/// The machine's CPU time from the `cpu` line of /proc/stat, in clock ticks: all of it, and the
/// part the hypervisor gave to other guests while this one wanted to run (steal). On a shared
/// VM, a lap with much steal is slower for reasons outside both daemons and the apps.
struct MachineTicks {
    var total: UInt64
    var steal: UInt64

    static func now() -> MachineTicks? {
        guard let stat = try? FileHandle(forReadingFrom: URL(fileURLWithPath: "/proc/stat")).readToEnd(),
              let text = String(data: stat, encoding: .utf8) else { return nil }
        return parse(text)
    }

    /// Reads the aggregate `cpu` line: user nice system idle iowait irq softirq steal … (guest
    /// time is already inside user and nice, so it is not added twice).
    static func parse(_ text: String) -> MachineTicks? {
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("cpu ") }) else { return nil }
        let fields = line.split(separator: " ").dropFirst().compactMap { UInt64($0) }
        guard fields.count >= 8 else { return nil }
        return MachineTicks(total: fields.prefix(8).reduce(0, +), steal: fields[7])
    }

    /// Steal's share of the machine's time since `before`, nil when no tick passed.
    func stealShare(since before: MachineTicks) -> Double? {
        guard total > before.total, steal >= before.steal else { return nil }
        return Double(steal - before.steal) / Double(total - before.total)
    }
}
