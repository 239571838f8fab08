import Foundation
import MeshCore
import MeshCrypto
import MeshDaemon

/// How one simulated run is set up (the seed picks the rest).
public struct SimulationConfiguration: Sendable {
    /// Steps before the healing phase.
    public var steps: Int
    /// The test-only bug switched on in the core, if any.
    public var bug: SimulationBug
    /// Where the daemons' stores live (one sub-folder per run, removed after it).
    public var folder: String
    /// Features each daemon's apps attach to (one app per daemon and feature).
    public var features = ["f0", "f1"]
    /// Longest stretch of virtual time one step advances, ns.
    public var maximumStepTime: UInt64 = 200_000_000
    /// Longest virtual time the healing phase may take before what is missing counts as lost.
    public var healingTime: UInt64 = 120_000_000_000
    /// Trace lines kept for printing (the digest covers every line either way).
    public var traceCapacity = 40
    /// Set: this many daemons (2–5) instead of the number the seed picks (the rest of the run
    /// still follows the seed).
    public var daemons: Int?
    /// The nodes of seeds that pick it (`Simulation.relayShare`) have a relay over the run's
    /// simulated broker (`Simulation+Relay.swift`); false: no seed has.
    public var relay = true
    /// Every link stays cut: the broker is the only path (the relay tests).
    public var brokerOnly = false
    /// Keys live as long as a real daemon's (rekey after 120 s), not 1.5 s: for tests in which a
    /// rekey would hide what they look at (a rekey also ends a stuck channel).
    public var longKeyLifetimes = false
    /// The daemons run with the device set on (`MESH_SIM_SET=0`: off). Off for the regression
    /// seeds, which replay runs found before the set existed.
    public var deviceSet = ProcessInfo.processInfo.environment["MESH_SIM_SET"] != "0"

    public init(steps: Int = SimulationEnvironment.defaultSteps, bug: SimulationBug = .none, folder: String) {
        self.steps = steps
        self.bug = bug
        self.folder = folder
    }
}

/// What one run did and found.
public struct SimulationResult: Sendable {
    public let seed: UInt64
    public let daemons: Int
    public let steps: Int
    public let itemsSent: Int
    public let itemsDelivered: Int
    public let faults: Int
    public let virtualMilliseconds: Double
    public let violations: [SimulationViolation]
    /// The last steps (up to 40; every step when the run kept its whole trace), oldest first.
    public let trace: [String]
    /// Lines the run recorded in all, and the digest over all of them (`SimulationTrace.digest`):
    /// two runs of one seed are the same run exactly when both agree.
    public var traceLines = 0
    public var traceDigest = ""
    /// The digest of every message the simulated network carried (`SimulatedNetwork.wireDigest`),
    /// 16 hex digits: equal for two runs that sent the same bytes in the same order.
    public var wireDigest = ""
    public let network: SimulatedNetwork.Tally
    /// Jobs that reached a daemon's loop from another thread (0 in a deterministic run).
    public var foreignJobs = 0
    /// What the real channel layers went through.
    public var channels = ChannelFigures()
    /// Anchors that arrived before their receiver had measured the setter's clock offset.
    public var anchorsBeforeOffset = 0

    public var passed: Bool { violations.isEmpty }
}

/// N real daemon cores (2–5) on one virtual clock over a simulated network, with apps, faults,
/// crashes and restarts, all chosen from one seed; invariants checked as it runs and at the end.
///
/// Single-threaded: `run()` drives every daemon's `SimulatedEventLoop` by hand, so the tasks of
/// all routers interleave the same way for the same seed. Nothing a run does depends on Swift's
/// per-process hash seed or on memory addresses: where the router or the simulation walks a
/// dictionary or a set, it walks it in insertion order or sorted (docs/SIMULATION.md,
/// "Determinism").
public final class Simulation: @unchecked Sendable {
    public let seed: UInt64
    let configuration: SimulationConfiguration
    public let context: SimulationContext
    let network: SimulatedNetwork
    /// The relay's MQTT broker (`SimulatedBroker`), its faults drawn from the seed.
    public let broker: SimulatedBroker
    /// The broker's outages.
    var brokerRandom: SimulationRandom
    var daemons: [SimulatedDaemon] = []
    var apps: [SimulatedApp] = []
    /// Choices of what each step does.
    var random: SimulationRandom
    /// Faults: which daemon crashes, which link breaks.
    var faultRandom: SimulationRandom
    /// The run's membership change (`Simulation+Membership.swift`): its own choices, and the
    /// step it happens at (nil: none, or done).
    var membershipRandom: SimulationRandom
    var membershipStepAt: Int?
    /// Step at which a crashed daemon restarts.
    var restartAt: [Int: Int] = [:]
    /// The next anchor revision per feature.
    var anchorRevision: [String: UInt64] = [:]
    /// Sessions apps announce and close, per feature.
    var sessions: [String: [UUID]] = [:]
    let runFolder: String
    /// The pair key of every two daemons (`low * count + high`).
    let pairKeys: [SecretBytes]
    /// Where each daemon incarnation's node random stream forks from.
    let nodeRandomRoot: SimulationRandom
    /// The routers' settings: short retries and small bounds, so a run of a few virtual seconds
    /// meets them.
    var routerOptions: DeliveryRouterOptions {
        var options = DeliveryRouterOptions()
        options.retryInitial = 0.2
        options.retryMaximum = 2
        options.closeWait = 0.5
        options.pendingCapacity = 16
        options.presenceLease = 3
        options.storeInline = true
        options.randomSeed = seed
        options.testBugDeleteOutboxAtSend = configuration.bug == .outboxDeletedBeforeAck
        options.testBugHandOutBeforeDurable = configuration.bug == .inboxHandOutNotDurable
        return options
    }

    /// Store settings of a simulated daemon: no open-time check and no space reserve (they cost a
    /// pass over the file and a 1 MiB write per open and are not what the simulation tests).
    var storeOptions: DeliveryStoreOptions {
        DeliveryStoreOptions(synchronous: .normal, verification: .none, spaceReserveBytes: 0)
    }

    /// Sets up a run for `seed`: how many daemons, their clock skews and link qualities.
    public init(seed: UInt64, configuration: SimulationConfiguration) throws {
        self.seed = seed
        self.configuration = configuration
        let root = SimulationRandom(seed: seed)
        random = root.fork("steps")
        faultRandom = root.fork("faults")
        var setup = root.fork("setup")
        let drawn = setup.weighted([0, 0, 45, 30, 15, 10]) ?? 2
        let count = configuration.daemons.map { min(5, max(2, $0)) } ?? drawn
        var membership = root.fork("membership")
        membershipStepAt = Self.membershipPlan(&membership, daemons: count, steps: configuration.steps, deviceSet: configuration.deviceSet)
        membershipRandom = membership
        let clock = VirtualClock()
        let skews = (0..<count).map { index in index == 0 ? 0 : Double(setup.int(-3_000...3_000)) / 1_000 }
        var identityRandom = root.fork("identities"), pairRandom = root.fork("pair-keys")
        let identities = try Self.identities(count, &identityRandom)
        pairKeys = Self.pairKeys(count, &pairRandom)
        nodeRandomRoot = root.fork("nodes")
        let keys = identities.map { DeviceID(publicKey: $0.publicKey).description }
        context = SimulationContext(seed: seed, clock: clock, daemons: count, deviceKeys: keys, skews: skews)
        context.trace = SimulationTrace(capacity: configuration.traceCapacity)
        network = SimulatedNetwork(nodeCount: count, clock: clock, random: root.fork("network"))
        network.deviceIDs = identities.map { DeviceID(publicKey: $0.publicKey) }
        var brokerSetup = root.fork("broker-setup")
        let relayDrawn = brokerSetup.chance(Self.relayShare)
        network.relayConfigured = configuration.relay && (relayDrawn || configuration.brokerOnly)
        broker = SimulatedBroker(clock: clock, random: root.fork("broker"), faults: Self.brokerFaults(&brokerSetup))
        brokerRandom = root.fork("broker-outages")
        runFolder = "\(configuration.folder)/seed-\(seed)"
        try FileManager.default.createDirectory(atPath: runFolder, withIntermediateDirectories: true)
        var ids = root.fork("ids")
        var engineSession: [String: UUID] = [:]
        for feature in configuration.features {
            sessions[feature] = (0..<3).map { _ in Self.uuid(&ids) }
            engineSession[feature] = Self.uuid(&ids)
        }
        for index in 0..<count {
            let meshClock = SimulatedMeshClock(clock: clock, skewNanoseconds: Int64(skews[index] * 1e9))
            daemons.append(SimulatedDaemon(index: index, identity: identities[index], folder: runFolder, clock: meshClock,
                                           virtualClock: clock))
            for feature in configuration.features {
                apps.append(SimulatedApp(daemon: index, feature: feature, session: engineSession[feature] ?? Self.uuid(&ids),
                                         seed: ids.next(), context: context))
            }
        }
        for a in 0..<count {
            for b in (a + 1)..<count where setup.chance(0.5) { network.setQuality(a, b, .random(using: &setup)) }
        }
        let network = self.network, daemons = self.daemons
        let broker = self.broker
        context.linkAsymmetry = { max(network.worstAsymmetry, network.relayConfigured ? broker.worstAsymmetry : 0) }
        context.offsetKnown = { receiver, sender in
            daemons[receiver].node?.hasOffsetEstimateOnLoop(of: daemons[sender].deviceID) ?? false
        }
        context.offsetErrorBound = { receiver, sender in
            daemons[receiver].node?.offsetErrorBoundOnLoop(of: daemons[sender].deviceID) ?? 0
        }
    }

    /// A UUID from the run's random stream (never the system's).
    static func uuid(_ random: inout SimulationRandom) -> UUID {
        let high = random.next(), low = random.next()
        var bytes = [UInt8](repeating: 0, count: 16)
        for index in 0..<8 {
            bytes[index] = UInt8(truncatingIfNeeded: high >> (8 * index))
            bytes[index + 8] = UInt8(truncatingIfNeeded: low >> (8 * index))
        }
        bytes[6] = (bytes[6] & 0x0F) | 0x40
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        return UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                           bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
    }

    /// Runs the steps, heals, runs the final checks, and removes the run's files.
    public func run() -> SimulationResult {
        defer {
            for daemon in daemons { daemon.shutDown() }
            try? FileManager.default.removeItem(atPath: runFolder)
        }
        do {
            for daemon in daemons { try boot(daemon.index) }
            for step in 0..<configuration.steps where !context.failed {
                context.step = step
                try performStep()
                stepBroker()
                advance(by: random.uint64(1_000_000...configuration.maximumStepTime))
                if step % 10 == 9 { checkMemory() }
            }
            if !context.failed { try heal() }
        } catch {
            context.fail([SimulationViolation(.stuck, "the simulation could not go on: \(error)")])
        }
        let foreign = daemons.reduce(0) { $0 + $1.foreignJobs }
        let figures = daemons.reduce(ChannelFigures()) { $0 + $1.channelFigures }
        if foreign > 0 { context.note("\(foreign) jobs reached the loops from other threads: this run depended on real timing") }
        return SimulationResult(seed: seed, daemons: daemons.count, steps: context.step + 1, itemsSent: context.itemsSent,
                                itemsDelivered: context.itemsDelivered, faults: context.faults,
                                virtualMilliseconds: context.clock.milliseconds, violations: context.violations,
                                trace: context.trace.recent, traceLines: context.trace.count,
                                traceDigest: context.trace.digestText, wireDigest: SimulationTrace.hex(network.wireDigest),
                                network: network.tally, foreignJobs: foreign, channels: figures,
                                anchorsBeforeOffset: context.anchorsBeforeOffset)
    }

    /// Starts daemon `index`'s current incarnation and connects it.
    func boot(_ index: Int) throws {
        try daemons[index].boot(simulation: self)
        network.start(index)
        context.note("d\(index) starts (incarnation \(daemons[index].incarnation))")
        runLoops()
    }

    /// Runs every live loop's queued jobs until all are idle (bounded).
    func runLoops() {
        for _ in 0..<10_000 {
            var ran = false
            for daemon in daemons where daemon.alive && daemon.loop.hasJobs {
                ran = true
                if !daemon.loop.runUntilIdle() {
                    context.fail([SimulationViolation(.stuck, "d\(daemon.index)'s loop did not go idle")])
                    return
                }
            }
            if !ran { return checkDatagramsFlushed() }
        }
        context.fail([SimulationViolation(.stuck, "the loops kept waking each other")])
    }

    /// Once the loops are idle, no datagram a router wrote batched still waits for its flush.
    private func checkDatagramsFlushed() {
        for daemon in daemons where daemon.alive {
            guard let waiting = daemon.transport?.batchedDatagramsWaiting, waiting > 0 else { continue }
            context.fail([SimulationViolation(.datagramNotFlushed, "d\(daemon.index) left \(waiting) batched datagrams unflushed")])
        }
    }

    /// Moves virtual time forward by `duration`, delivering what the network carries and firing
    /// the daemons' timers in time order.
    func advance(by duration: UInt64) {
        let target = context.clock.nanoseconds + duration
        for _ in 0..<1_000_000 {
            runLoops()
            let timers = daemons.compactMap { $0.alive ? $0.loop.nextDeadline : nil }.min()
            guard let next = [timers, network.nextTime].compactMap({ $0 }).min(), next <= target, !context.failed else { break }
            context.clock.advance(to: next)
            while let event = network.nextDue() {
                dispatch(event)
                runLoops()
            }
            for daemon in daemons where daemon.alive { daemon.loop.fireDue() }
        }
        context.clock.advance(to: target)
        runLoops()
    }

    /// Hands a network event to the daemon it is for (nothing for a crashed one).
    func dispatch(_ event: NetworkEvent) {
        guard daemons[event.node].alive else { return }
        daemons[event.node].receive(event)
    }
}
