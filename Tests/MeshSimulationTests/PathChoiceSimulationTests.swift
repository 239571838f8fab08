import Foundation
import MeshCore
import MeshDaemon
@testable import MeshSimulation
import Testing

/// Path choice in real nodes: two simulated daemons (the real `MeshNode`, router and store)
/// whose link is cut and restored while the relay route between them stays up, on virtual
/// time. The seed (`MESH_SIM_SEED`, else a fixed one) picks ephemerals, jitter and delays; it
/// is printed, so a failure replays.
@Suite("Path choice in real nodes: direct preferred, the relay within 2 s, a 30 s hold")
struct PathChoiceSimulationTests {
    static let millisecond: UInt64 = 1_000_000
    static let second: UInt64 = 1_000_000_000

    /// Two paired daemons over a clean link, the relay route up and configured; not booted.
    final class Pair {
        let simulation: Simulation
        let seed: UInt64

        init(_ test: String) throws {
            seed = (try? SimulationEnvironment.parse())?.replaySeed ?? 7_301
            print("\(test): seed \(seed) (MESH_SIM_SEED=\(seed) replays it)")
            var configuration = SimulationConfiguration(steps: 0, folder: NSTemporaryDirectory() + "pathchoice-\(UUID().uuidString)")
            configuration.daemons = 2
            simulation = try Simulation(seed: seed, configuration: configuration)
            simulation.network.setQuality(0, 1, .clean)
            simulation.network.relayConfigured = true
            simulation.broker.faults = .none
            simulation.network.setRelay(0, 1, up: true)
        }

        deinit {
            for daemon in simulation.daemons { daemon.shutDown() }
            try? FileManager.default.removeItem(atPath: simulation.runFolder)
        }

        func boot() throws {
            try simulation.boot(0)
            try simulation.boot(1)
        }

        var now: UInt64 { simulation.context.clock.nanoseconds }

        /// The kind of path daemon `a`'s channel to `b` runs on (`relay`, `direct`, nil: none).
        func path(_ a: Int, _ b: Int) -> String? {
            simulation.daemons[a].node?.channelPathOnLoop(of: simulation.daemons[b].deviceID)
        }

        /// Both ends' channel on `kind`.
        func both(_ kind: String) -> Bool { path(0, 1) == kind && path(1, 0) == kind }

        func cutLink(_ cut: Bool) { simulation.network.setPartitioned(0, 1, cut) }

        /// Advances in 10 ms steps until `condition` holds (the virtual time it took) or
        /// `limit` passed (nil).
        func advance(until limit: UInt64, _ condition: () -> Bool) -> UInt64? {
            let start = now
            while now - start <= limit {
                if condition() { return now - start }
                simulation.advance(by: 10 * PathChoiceSimulationTests.millisecond)
            }
            return nil
        }

        /// Advances by `duration`, calling `each` after every 10 ms step.
        func advance(by duration: UInt64, _ each: () -> Void = {}) {
            let end = now + duration
            while now < end {
                simulation.advance(by: 10 * PathChoiceSimulationTests.millisecond)
                each()
            }
        }
    }

    static func ms(_ nanoseconds: UInt64?) -> String { nanoseconds.map { "\($0 / millisecond) ms" } ?? "never" }

    @Test("no direct path: the channel runs on the relay within 2 s of start; a link that comes back takes it over")
    func relayAtStartThenDirect() throws {
        let pair = try Pair("relayAtStartThenDirect")
        pair.cutLink(true)
        try pair.boot()
        let onRelay = pair.advance(until: 5 * Self.second) { pair.both("relay") }
        print("path choice figure: no direct path, both ends on the relay \(Self.ms(onRelay)) after start")
        #expect(onRelay != nil && onRelay! <= 2 * Self.second, "on the relay within 2 s: \(Self.ms(onRelay))")
        // Nothing moves while only the relay works.
        pair.advance(by: 10 * Self.second)
        #expect(pair.both("relay"))
        pair.cutLink(false)
        let onDirect = pair.advance(until: 10 * Self.second) { pair.both("direct") }
        print("path choice figure: link restored, both ends on the direct path \(Self.ms(onDirect)) later")
        #expect(onDirect != nil, "moved to the direct path: \(Self.ms(onDirect))")
        // … and stays there.
        pair.advance(by: 40 * Self.second)
        #expect(pair.both("direct"))
        #expect(pair.simulation.daemons[0].node?.channelPathDescriptionOnLoop(of: pair.simulation.daemons[1].deviceID)?.hasPrefix("10.") == true)
    }

    @Test("a direct channel whose link dies: on the relay within 2 s of the loss, not behind the direct dial's 2 s connect timeout")
    func lostDirectGoesToRelay() throws {
        let pair = try Pair("lostDirectGoesToRelay")
        try pair.boot()
        #expect(pair.advance(until: 5 * Self.second) { pair.both("direct") } != nil, "direct at start")
        // Without a cut nothing goes to the relay.
        pair.advance(by: 5 * Self.second)
        #expect(pair.both("direct"))
        #expect(pair.simulation.daemons[0].node?.pathChangesOnLoop() == 0)
        pair.cutLink(true)
        // The reachability lease (1.5 s in the simulator) finds the loss out.
        let lost = pair.advance(until: 5 * Self.second) { pair.path(0, 1) != "direct" || pair.path(1, 0) != "direct" }
        #expect(lost != nil)
        let onRelay = pair.advance(until: 5 * Self.second) { pair.both("relay") }
        print("path choice figure: link cut, loss seen after \(Self.ms(lost)), both ends on the relay \(Self.ms(onRelay)) after that")
        #expect(onRelay != nil && onRelay! <= 2 * Self.second, "on the relay within 2 s of the loss: \(Self.ms(onRelay))")
        #expect(pair.simulation.daemons[0].node?.channelPathDescriptionOnLoop(of: pair.simulation.daemons[1].deviceID)
                    == "relay \(SimulatedNetwork.relayBroker)")
    }

    @Test("a flapping link: while both paths work the channel leaves the relay at most once per 30 s at either end; a dead path is never held")
    func flappingIsHeld() throws {
        let pair = try Pair("flappingIsHeld")
        try pair.boot()
        #expect(pair.advance(until: 5 * Self.second) { pair.both("direct") } != nil, "direct at start")
        /// What one end saw: when its channel moved to direct and to the relay, its longest
        /// stretch without a channel.
        struct End {
            let from: Int, to: Int
            var toDirect: [UInt64] = [], toRelay: [UInt64] = [], lastSeen: String?
            var longestWithout: UInt64 = 0, withoutSince: UInt64?
            var gaps: [UInt64] { zip(toDirect.dropFirst(), toDirect).map { $0 - $1 } }
        }
        var ends = [End(from: 0, to: 1, lastSeen: pair.path(0, 1)), End(from: 1, to: 0, lastSeen: pair.path(1, 0))]
        let watch = {
            for index in ends.indices {
                let seen = pair.path(ends[index].from, ends[index].to)
                if seen != ends[index].lastSeen, let seen {
                    if seen == "direct" { ends[index].toDirect.append(pair.now) } else { ends[index].toRelay.append(pair.now) }
                }
                if seen == nil { ends[index].withoutSince = ends[index].withoutSince ?? pair.now } else if let since = ends[index].withoutSince {
                    ends[index].longestWithout = max(ends[index].longestWithout, pair.now - since)
                    ends[index].withoutSince = nil
                }
                ends[index].lastSeen = seen ?? ends[index].lastSeen
            }
        }
        // The link goes down for 4 s and up for 6 s, twelve times.
        for _ in 0 ..< 12 {
            pair.cutLink(true)
            pair.advance(by: 4 * Self.second, watch)
            pair.cutLink(false)
            pair.advance(by: 6 * Self.second, watch)
        }
        for end in ends {
            print("path choice figure: 12 flaps of 10 s, d\(end.from)'s end: \(end.toRelay.count) moves to the relay, \(end.toDirect.count) back to direct,"
                  + " \(end.gaps.map { "\($0 / Self.millisecond)" }.joined(separator: " ")) ms between those, longest without a channel \(Self.ms(end.longestWithout))")
            #expect(!end.toRelay.isEmpty && !end.toDirect.isEmpty, "d\(end.from): the channel moved both ways")
            #expect(end.gaps.allSatisfy { $0 >= 30 * Self.second }, "d\(end.from): moves back to direct at least 30 s apart: \(end.gaps)")
            #expect(end.toDirect.count <= 5, "d\(end.from): in 120 s at most 4 holds passed (plus the first move)")
            // Each loss (lease 1.5 s) is followed by the relay within 2 s: never held.
            #expect(end.longestWithout <= 2 * Self.second, "d\(end.from): longest stretch without a channel: \(Self.ms(end.longestWithout))")
        }
    }

    @Test("reliable items sent both ways across changes direct → relay → direct → relay: none lost, none twice")
    func reliableItemsAcrossChanges() throws {
        let pair = try Pair("reliableItemsAcrossChanges")
        try pair.boot()
        let simulation = pair.simulation
        for app in simulation.apps { app.attach(on: simulation.daemons[app.daemon]) }
        var value = 0, step = 0
        // Every 100 ms of virtual time: hundreds of items in flight across each change.
        let traffic = {
            step += 1
            guard step % 10 == 0 else { return }
            for app in simulation.apps where !app.busy {
                if app.unsent.isEmpty {
                    value = value % 9 + 1
                    _ = app.submit(value)
                }
                app.sendNextReliable(on: simulation.daemons[app.daemon])
                if !app.busy, !app.unacknowledged.isEmpty { app.acknowledge(count: 4, on: simulation.daemons[app.daemon]) }
            }
        }
        var changes: [String] = []
        let phases: [(cut: Bool, kind: String)] = [(false, "direct"), (true, "relay"), (false, "direct"), (true, "relay")]
        for phase in phases {
            pair.cutLink(phase.cut)
            var reached: UInt64?
            pair.advance(by: 35 * Self.second) {
                traffic()
                if reached == nil, pair.both(phase.kind) { reached = pair.now }
            }
            changes.append("\(phase.kind) \(reached == nil ? "never" : "reached")")
            #expect(reached != nil, "both ends on \(phase.kind)")
        }
        print("path choice figure: \(simulation.context.itemsSent) reliable items sent across \(changes.joined(separator: ", "))")
        #expect(simulation.context.itemsSent >= 40)
        try simulation.heal()
        #expect(simulation.context.violations.isEmpty, "\(simulation.context.violations.map(\.description))")
        #expect(simulation.context.itemsDelivered > 0)
    }
}
