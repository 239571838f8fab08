import Foundation
import MeshSimulation
import Testing

/// A seed's run depends on the seed alone: not on Swift's per-process hash seed (which changes
/// the order in which a `Dictionary` or a `Set` is walked), nor on memory addresses, nor on
/// anything else a process picks for itself. Swift fixes the hash seed once per process, so this
/// runs the same seeds in three child processes of this test binary: one with the hash seed fixed
/// (`SWIFT_DETERMINISTIC_HASHING=1`), two with a random one each, and compares every seed's trace
/// digest (every line of its trace) and wire digest (every message its network carried).
@Suite("Simulation process replay", .serialized)
struct SimulationProcessReplayTests {
    /// Seeds per child: with five daemons each router has four peers, so every walk over peers
    /// (a flush at a turn's end, a presence or session broadcast) has an order to get wrong.
    static let seeds = 4
    static let steps = 40
    static let daemons = 5

    @Test("SimulationProcessReplay: a seed gives the same trace and wire bytes in processes with different hash seeds")
    func acrossProcesses() throws {
        let base = try SimulationEnvironment.parse().seedBase
        print("simulation process replay: seeds \(base)…\(base &+ UInt64(Self.seeds - 1)), \(Self.daemons) daemons, \(Self.steps) steps")
        let runs = try Self.runChildren(seedBase: base, fixedHashing: [true, false, false])
        for (index, run) in runs.enumerated() {
            #expect(run.status == 0, "child \(index) exited with \(run.status):\n\(run.output.suffix(4000))")
            #expect(run.digests.count == Self.seeds, "child \(index) printed \(run.digests.count) digest lines:\n\(run.output.suffix(4000))")
            #expect(!run.digests.contains { $0.contains("other threads") }, "child \(index): \(run.digests)")
            print("child \(index) (hash probe \(run.hashProbe ?? "none")):\n  " + run.digests.joined(separator: "\n  "))
        }
        // The premise: the three processes really walked their dictionaries with different seeds.
        let probes = runs.compactMap(\.hashProbe)
        #expect(probes.count == runs.count && Set(probes).count == runs.count, "hash probes \(probes)")
        guard let first = runs.first else { return }
        for (index, run) in runs.enumerated().dropFirst() {
            for (fixed, random) in zip(first.digests, run.digests) where fixed != random {
                Issue.record("child \(index) (a random hash seed) ran a seed differently from child 0 (hash seed fixed):\n  \(fixed)\n  \(random)")
            }
        }
    }

    struct ChildRun {
        var status: Int32
        var output: String
        /// The `seed N: trace of …, digest …, wire digest …` lines, in seed order.
        var digests: [String]
        var hashProbe: String?
    }

    /// Runs the campaign test of this binary in one child per entry of `fixedHashing`, side by
    /// side, each within a deadline (a child still running then is terminated, and fails).
    static func runChildren(seedBase: UInt64, fixedHashing: [Bool]) throws -> [ChildRun] {
        let executable = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("mesh-sim-process-replay-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        var environment = ProcessInfo.processInfo.environment
        for name in ["SWIFT_DETERMINISTIC_HASHING", "MESH_SIM_SEED", "MESH_SIM_BUG"] { environment[name] = nil }
        environment.merge([
            "MESH_SIM_SEEDS": String(seeds), "MESH_SIM_SEED_BASE": String(seedBase), "MESH_SIM_STEPS": String(steps),
            "MESH_SIM_DAEMONS": String(daemons), "MESH_SIM_DIGESTS": "1", "MESH_SIM_THREADS": "1",
        ]) { $1 }
        var children: [(process: Process, done: DispatchSemaphore, log: URL)] = []
        defer {
            for child in children where child.process.isRunning { child.process.terminate() }
        }
        for (index, fixed) in fixedHashing.enumerated() {
            let child = Process()
            child.executableURL = URL(fileURLWithPath: executable)
            child.arguments = ["--testing-library", "swift-testing", "--filter", "SimulationCampaignTests/campaign"]
            var childEnvironment = environment
            if fixed { childEnvironment["SWIFT_DETERMINISTIC_HASHING"] = "1" }
            child.environment = childEnvironment
            let log = folder.appendingPathComponent("child-\(index).log")
            FileManager.default.createFile(atPath: log.path, contents: nil)
            let handle = try FileHandle(forWritingTo: log)
            child.standardOutput = handle
            child.standardError = handle
            let done = DispatchSemaphore(value: 0)
            child.terminationHandler = { _ in done.signal() }
            try child.run()
            try handle.close()
            children.append((child, done, log))
        }
        let deadline = DispatchTime.now() + .seconds(180)
        return children.map { child in
            let finished = child.done.wait(timeout: deadline) == .success
            if !finished {
                child.process.terminate()
                child.done.wait()
            }
            let output = (try? String(contentsOf: child.log, encoding: .utf8)) ?? ""
            let lines = output.split(separator: "\n").map(String.init)
            let probe = lines.first { $0.contains("hash probe ") }.flatMap { $0.split(separator: " ").first { $0.count == 16 } }.map(String.init)
            return ChildRun(status: finished ? child.process.terminationStatus : -1,
                            output: finished ? output : "timed out after 180 s\n" + output,
                            digests: lines.filter { $0.hasPrefix("seed ") && $0.contains(" wire digest ") },
                            hashProbe: probe)
        }
    }
}
