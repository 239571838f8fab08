import Foundation

/// The simulator's settings from the environment (docs/SIMULATION.md lists them).
///
/// `MESH_SIM_SEEDS` seeds run, starting at `MESH_SIM_SEED_BASE`; `MESH_SIM_SEED` runs just that
/// one (a replay, printing its whole trace); `MESH_SIM_STEPS` steps per seed; `MESH_SIM_DAEMONS`
/// fixes the number of daemons; `MESH_SIM_DIGESTS` prints each seed's digests; `MESH_SIM_BUG`
/// turns on one of the test-only bug switches. A value that does not parse is an error naming
/// the variable, never silently the default.
public struct SimulationEnvironment: Sendable, Equatable {
    public var seeds: Int
    public var seedBase: UInt64
    /// Set: replay only this seed, verbosely.
    public var replaySeed: UInt64?
    public var steps: Int
    public var bug: SimulationBug
    /// Threads running seeds side by side (each seed runs on one thread, so this does not
    /// change what a seed does). `MESH_SIM_THREADS`, default 2.
    public var threads: Int
    /// Set: every seed runs this many daemons (2–5) instead of the number its seed picks.
    /// `MESH_SIM_DAEMONS`.
    public var daemons: Int?
    /// Print one line per seed with its trace and wire digests (`MESH_SIM_DIGESTS=1`), so runs in
    /// separate processes can be compared.
    public var printDigests: Bool
    /// Run every seed even after one failed, and count the failures by invariant
    /// (`MESH_SIM_ALL_SEEDS=1`): how many seeds catch a bug.
    public var allSeeds = false

    public static let defaultSeeds = 2_000
    public static let defaultSeedBase: UInt64 = 1
    public static let defaultSteps = 24

    /// Reads `environment` (the process's by default).
    public static func parse(_ environment: [String: String] = ProcessInfo.processInfo.environment,
                             defaultSeeds: Int = defaultSeeds) throws -> SimulationEnvironment {
        func number(_ name: String, _ fallback: UInt64, range: ClosedRange<UInt64>) throws -> UInt64 {
            guard let text = environment[name]?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return fallback }
            guard let value = UInt64(text), range.contains(value) else {
                throw SimulationEnvironmentError("\(name)=\(text): expected a whole number in \(range.lowerBound)…\(range.upperBound)")
            }
            return value
        }
        let seeds = try number("MESH_SIM_SEEDS", UInt64(defaultSeeds), range: 1...100_000_000)
        let base = try number("MESH_SIM_SEED_BASE", defaultSeedBase, range: 0...UInt64.max)
        let steps = try number("MESH_SIM_STEPS", UInt64(defaultSteps), range: 1...1_000_000)
        let threads = try number("MESH_SIM_THREADS", 2, range: 1...64)
        let replayText = environment["MESH_SIM_SEED"]?.trimmingCharacters(in: .whitespaces) ?? ""
        let replay: UInt64? = replayText.isEmpty ? nil : try number("MESH_SIM_SEED", 0, range: 0...UInt64.max)
        let bugName = environment["MESH_SIM_BUG"] ?? ""
        guard let bug = SimulationBug(rawValue: bugName.isEmpty ? "none" : bugName) else {
            throw SimulationEnvironmentError("MESH_SIM_BUG=\(bugName): expected one of \(SimulationBug.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        let daemonsText = environment["MESH_SIM_DAEMONS"]?.trimmingCharacters(in: .whitespaces) ?? ""
        let daemons: UInt64? = daemonsText.isEmpty ? nil : try number("MESH_SIM_DAEMONS", 0, range: 2...5)
        let digestsText = environment["MESH_SIM_DIGESTS"]?.trimmingCharacters(in: .whitespaces) ?? ""
        guard ["", "0", "1"].contains(digestsText) else {
            throw SimulationEnvironmentError("MESH_SIM_DIGESTS=\(digestsText): expected 0 or 1")
        }
        let allText = environment["MESH_SIM_ALL_SEEDS"]?.trimmingCharacters(in: .whitespaces) ?? ""
        guard ["", "0", "1"].contains(allText) else {
            throw SimulationEnvironmentError("MESH_SIM_ALL_SEEDS=\(allText): expected 0 or 1")
        }
        return SimulationEnvironment(seeds: Int(seeds), seedBase: base, replaySeed: replay, steps: Int(steps), bug: bug, threads: Int(threads),
                                     daemons: daemons.map { Int($0) }, printDigests: digestsText == "1", allSeeds: allText == "1")
    }

    /// The seeds to run, in order (one when replaying). Wraps past `UInt64.max`.
    public var seedList: [UInt64] {
        if let replaySeed { return [replaySeed] }
        return (0..<seeds).map { seedBase &+ UInt64($0) }
    }

    /// The shell command that replays `seed` with these settings.
    public func replayCommand(seed: UInt64) -> String {
        var words = ["MESH_SIM_SEED=\(seed)"]
        if steps != Self.defaultSteps { words.append("MESH_SIM_STEPS=\(steps)") }
        if let daemons { words.append("MESH_SIM_DAEMONS=\(daemons)") }
        if bug != .none { words.append("MESH_SIM_BUG=\(bug.rawValue)") }
        words += ["swift", "test", "--filter", "SimulationCampaign"]
        return words.joined(separator: " ")
    }
}

/// A test-only bug the simulation turns on in the real core, to show it catches it.
public enum SimulationBug: String, Sendable, Equatable, CaseIterable {
    case none
    /// An inbox item reaches the app before its hand-out is durable.
    case inboxHandOutNotDurable = "inbox-hand-out"
    /// An outbox item is deleted before the peer acknowledged it.
    case outboxDeletedBeforeAck = "outbox-delete"
    /// The node does not try a dial round again after it failed at every address
    /// (`ChannelTuning.testBugDialNotRetried`).
    case dialNotRetried = "dial-no-retry"
    /// A responder records a handshake's timestamp when it answers message 1, before the
    /// initiator confirmed (`ChannelTuning.testBugTimestampRecordedAtAnswer`).
    case timestampRecordedAtAnswer = "handshake-timestamp-at-answer"
}

/// A simulator setting that does not parse.
public struct SimulationEnvironmentError: Error, CustomStringConvertible, Equatable {
    public let description: String
    init(_ description: String) { self.description = description }
}
