import Foundation

/// Runs many seeds and sums them up; prints a failing seed's trace and its replay command.
public struct SimulationCampaign: Sendable {
    /// Totals over the seeds run.
    public struct Summary: Sendable, CustomStringConvertible {
        public var seedsRun = 0
        public var seedBase: UInt64 = 0
        public var steps = 0, itemsSent = 0, itemsDelivered = 0, faults = 0
        public var daemons = 0
        public var channels = ChannelFigures()
        public var moves = 0, anchorsBeforeOffset = 0
        public var virtualSeconds = 0.0
        public var wallSeconds = 0.0
        /// The first failing run, if any.
        public var failure: SimulationResult?
        /// Seeds that failed, and how many of them broke each invariant (all counted only with
        /// `MESH_SIM_ALL_SEEDS=1`; else a campaign stops at its first failure).
        public var failedSeeds = 0
        public var failuresByInvariant: [String: Int] = [:]

        public var description: String {
            let perSeed = seedsRun > 0 ? wallSeconds / Double(seedsRun) * 1000 : 0
            return "simulation: \(seedsRun) seeds from base \(seedBase) \(failure == nil ? "passed" : "FAILED"): "
                + "\(daemons) daemons, \(steps) steps, \(itemsSent) items sent, \(itemsDelivered) handed to apps, "
                + "\(faults) faults (\(moves) address moves), \(channels), \(anchorsBeforeOffset) anchors before an offset, "
                + "\(Int(virtualSeconds)) s virtual, \(String(format: "%.1f", perSeed)) ms per seed"
                + (failedSeeds > 0 ? "; \(failedSeeds) seeds failed (" + failuresByInvariant.sorted { $0.key < $1.key }
                    .map { "\($0.key) \($0.value)" }.joined(separator: ", ") + ")" : "")
        }
    }

    public let environment: SimulationEnvironment
    /// Where runs keep their stores: /dev/shm when it exists (no disk I/O), else the temp folder.
    public let folder: String

    public init(environment: SimulationEnvironment) {
        self.environment = environment
        let shm = "/dev/shm"
        let base = FileManager.default.isWritableFile(atPath: shm) ? shm : NSTemporaryDirectory()
        // Its own folder: campaigns of one test process may run side by side (a random name is
        // fine here: the folder's name changes nothing a seed does).
        folder = "\(base)/mesh-sim-\(ProcessInfo.processInfo.processIdentifier)-\(UUID().uuidString.prefix(8))"
    }

    /// Runs the environment's seeds on `environment.threads` threads (seed i on thread
    /// i mod threads, each thread in seed order); every thread stops once a seed failed. Sums up
    /// every seed run, and reports the failing seed with the lowest number.
    public func run(log: (String) -> Void = { print($0) }) -> Summary {
        let seeds = environment.seedList
        let threads = environment.replaySeed != nil ? 1 : max(1, min(environment.threads, seeds.count))
        let started = Date()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let results = CampaignResults(count: seeds.count, keepGoing: environment.allSeeds)
        let done = DispatchGroup()
        for worker in 0..<threads {
            done.enter()
            let thread = Thread { [environment, folder] in
                for index in stride(from: worker, to: seeds.count, by: threads) where !results.stopped(before: index) {
                    let result = Self.runOne(seed: seeds[index], steps: environment.steps, bug: environment.bug, folder: folder,
                                             wholeTrace: environment.replaySeed != nil, daemons: environment.daemons)
                    results.set(index, result)
                }
                done.leave()
            }
            thread.stackSize = 8 << 20
            thread.start()
        }
        done.wait()
        var summary = Summary()
        summary.seedBase = environment.replaySeed ?? environment.seedBase
        if environment.printDigests { log("simulation: this process's hash probe \(Self.hashProbe) (the digests must not depend on it)") }
        for result in results.all {
            summary.seedsRun += 1
            summary.steps += result.steps
            summary.itemsSent += result.itemsSent
            summary.itemsDelivered += result.itemsDelivered
            summary.faults += result.faults
            summary.daemons += result.daemons
            summary.channels = summary.channels + result.channels
            summary.moves += result.network.moves
            summary.anchorsBeforeOffset += result.anchorsBeforeOffset
            summary.virtualSeconds += result.virtualMilliseconds / 1000
            if environment.replaySeed != nil {
                log("seed \(result.seed): \(result.daemons) daemons, \(result.steps) steps, network \(result.network)")
                for line in result.trace { log("  \(line)") }
            }
            if environment.replaySeed != nil || environment.printDigests {
                log(Self.digestLine(result))
            }
            if !result.passed {
                summary.failedSeeds += 1
                for invariant in Set(result.violations.map(\.invariant.rawValue)) { summary.failuresByInvariant[invariant, default: 0] += 1 }
            }
            if !result.passed, summary.failure == nil {
                summary.failure = result
                log(report(result))
            }
        }
        summary.wallSeconds = Date().timeIntervalSince(started)
        return summary
    }

    /// Runs seeds from `base` with `bug` switched on until one fails; nil when none of `limit`
    /// did. Returns how many seeds ran (the failing one included) and its result.
    public func seedsToCatch(_ bug: SimulationBug, from base: UInt64, limit: Int) -> (seeds: Int, result: SimulationResult)? {
        defer { try? FileManager.default.removeItem(atPath: folder) }
        for offset in 0..<limit {
            let result = Self.runOne(seed: base &+ UInt64(offset), steps: environment.steps, bug: bug, folder: folder,
                                     daemons: environment.daemons)
            if !result.passed { return (offset + 1, result) }
        }
        return nil
    }

    /// One seed. With `wholeTrace` the result keeps every trace line (a replay prints them all).
    public static func runOne(seed: UInt64, steps: Int, bug: SimulationBug, folder: String, wholeTrace: Bool = false,
                              daemons: Int? = nil, deviceSet: Bool? = nil) -> SimulationResult {
        do {
            var configuration = SimulationConfiguration(steps: steps, bug: bug, folder: folder)
            if let deviceSet { configuration.deviceSet = deviceSet }
            if wholeTrace { configuration.traceCapacity = Int.max }
            configuration.daemons = daemons
            return try Simulation(seed: seed, configuration: configuration).run()
        } catch {
            return SimulationResult(seed: seed, daemons: 0, steps: 0, itemsSent: 0, itemsDelivered: 0, faults: 0,
                                    virtualMilliseconds: 0, violations: [SimulationViolation(.stuck, "set-up failed: \(error)")],
                                    trace: [], network: SimulatedNetwork.Tally())
        }
    }

    /// What a failing seed prints: the violation, the last steps, and the replay command.
    public func report(_ result: SimulationResult) -> String {
        var lines = ["simulation seed \(result.seed) FAILED after \(result.steps) steps (\(result.daemons) daemons):"]
        lines += result.violations.map { "  \($0)" }
        lines.append("last steps:")
        lines += result.trace.map { "  \($0)" }
        lines.append("trace: \(result.traceLines) lines, digest \(result.traceDigest), wire digest \(result.wireDigest) (a replay prints the same)")
        lines.append("replay: \(environment.replayCommand(seed: result.seed))")
        return lines.joined(separator: "\n")
    }

    /// One seed's digests: `seed N: trace of L lines, digest D, wire digest W` (and a note when a
    /// job reached a loop from another thread). Two runs of a seed, in one process or in two,
    /// print the same line.
    public static func digestLine(_ result: SimulationResult) -> String {
        "seed \(result.seed): trace of \(result.traceLines) lines, digest \(result.traceDigest), wire digest \(result.wireDigest)"
            + (result.foreignJobs > 0 ? "; \(result.foreignJobs) jobs came from other threads (not a deterministic run)" : "")
    }

    /// A value that depends on this process's hash seed (Swift picks one per process unless
    /// `SWIFT_DETERMINISTIC_HASHING` is set): printed with the digests, so a comparison of two
    /// processes can tell that their hash seeds differed.
    public static var hashProbe: String {
        var hasher = Hasher()
        hasher.combine(0x5EED as UInt64)
        return SimulationTrace.hex(UInt64(bitPattern: Int64(hasher.finalize())))
    }
}

/// The results of a campaign's threads, by seed index.
final class CampaignResults: @unchecked Sendable {
    private let lock = NSLock()
    private var results: [SimulationResult?]
    private var firstFailure = Int.max
    private let keepGoing: Bool

    init(count: Int, keepGoing: Bool) {
        results = Array(repeating: nil, count: count)
        self.keepGoing = keepGoing
    }

    func set(_ index: Int, _ result: SimulationResult) {
        lock.withLock {
            results[index] = result
            if !result.passed { firstFailure = min(firstFailure, index) }
        }
    }

    /// Whether a seed before `index` failed already (later seeds need not run).
    func stopped(before index: Int) -> Bool { lock.withLock { !keepGoing && firstFailure < index } }

    /// The results in seed order.
    var all: [SimulationResult] { lock.withLock { results.compactMap { $0 } } }
}
