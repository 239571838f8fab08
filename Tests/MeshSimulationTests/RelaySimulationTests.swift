import Foundation
import MeshCore
import MeshDaemon
@testable import MeshSimulation
import Testing

/// Real nodes whose only path is the real relay (`RelayTransport`, `RelayMailbox`) over the
/// simulated broker: the broker can drop, delay, duplicate, reorder and replay messages and go
/// down without effect beyond delay. The seed comes from `MESH_SIM_SEED` (else fixed) and is
/// printed.
@Suite("Relay path in the simulator: the broker's faults cost only delay", .serialized)
struct RelaySimulationTests {
    static let second: UInt64 = 1_000_000_000

    static func seed(_ fixed: UInt64, _ test: String) -> UInt64 {
        let seed = (try? SimulationEnvironment.parse())?.replaySeed ?? fixed
        print("\(test): seed \(seed) (MESH_SIM_SEED=\(seed) replays it)")
        return seed
    }

    static func configuration(_ name: String, steps: Int) -> SimulationConfiguration {
        var configuration = SimulationConfiguration(steps: steps, folder: NSTemporaryDirectory() + "relaysim-\(name)-\(UUID().uuidString)")
        configuration.daemons = 2
        configuration.brokerOnly = true
        return configuration
    }

    @Test("two nodes only on the broker, heavy faults and outages: every invariant holds (no reliable item lost or handed out twice)",
          arguments: [0, 1, 2])
    func heavyFaults(offset: UInt64) throws {
        let seed = Self.seed(501 + offset, "heavyFaults")
        let simulation = try Simulation(seed: seed, configuration: Self.configuration("heavy", steps: 40))
        var faults = BrokerFaults.heavy
        faults.outagePerStep = 0.1
        faults.qos1Loss = 0.02  // a broker over its limits: a stream path's hole ends the path, not the channel
        simulation.broker.faults = faults
        let result = simulation.run()
        let tally = simulation.broker.tally
        print("relay simulation figure: seed \(seed): \(result.itemsSent) items sent, \(result.itemsDelivered) handed out, "
              + "broker \(tally.published) published, \(tally.delivered) delivered, \(tally.lost) lost, \(tally.duplicated) duplicated, "
              + "\(tally.reordered) reordered, \(tally.replayed) replayed, \(tally.outages) outages")
        #expect(result.passed, "\(result.violations.map(\.description).joined(separator: "; "))\n\(result.trace.joined(separator: "\n"))")
        #expect(tally.published > 0 && tally.delivered > 0, "the channels ran on the broker")
        #expect(result.itemsSent > 0)
    }

    @Test("a broker outage: the channel on the relay ends, and is back within the bound after the broker heals")
    func outageRecovers() throws {
        let seed = Self.seed(7_301, "outageRecovers")
        let simulation = try Simulation(seed: seed, configuration: Self.configuration("outage", steps: 0))
        let folder = simulation.runFolder
        defer {
            for daemon in simulation.daemons { daemon.shutDown() }
            try? FileManager.default.removeItem(atPath: folder)
        }
        simulation.broker.faults = .none
        simulation.network.setQuality(0, 1, .clean)
        simulation.cutEveryLink()
        try simulation.boot(0)
        try simulation.boot(1)
        let onRelay = { () -> Bool in
            let a = simulation.daemons[0].node?.channelPathOnLoop(of: simulation.daemons[1].deviceID)
            let b = simulation.daemons[1].node?.channelPathOnLoop(of: simulation.daemons[0].deviceID)
            return a == "relay" && b == "relay"
        }
        func advance(until limit: UInt64, _ condition: () -> Bool) -> UInt64? { Self.advance(simulation, until: limit, condition) }
        #expect(advance(until: 5 * Self.second, onRelay) != nil, "on the relay at start")
        simulation.broker.setDown(true)
        let lost = advance(until: 10 * Self.second) { !onRelay() }
        #expect(lost != nil, "the channel ended during the outage")
        simulation.advance(by: 3 * Self.second)
        simulation.broker.setDown(false)
        let bound = SimulatedBrokerClient.maximumRetry + Simulation.channelRecoveryBound
        let back = advance(until: bound, onRelay)
        print("relay simulation figure: outage: channel lost \(lost.map { $0 / 1_000_000 } ?? 0) ms after the broker went down, "
              + "back \(back.map { "\($0 / 1_000_000) ms" } ?? "never") after it healed (bound \(bound / 1_000_000) ms)")
        #expect(back != nil, "channel back within \(bound / 1_000_000) ms of the broker healing")
    }

    /// Advances virtual time in 10 ms steps until `condition` holds (the time it took) or
    /// `limit` has passed (nil).
    private static func advance(_ simulation: Simulation, until limit: UInt64, _ condition: () -> Bool) -> UInt64? {
        let start = simulation.context.clock.nanoseconds
        while simulation.context.clock.nanoseconds - start <= limit {
            if condition() { return simulation.context.clock.nanoseconds - start }
            simulation.advance(by: 10_000_000)
        }
        return nil
    }

    @Test("a broker that drops one QoS 1 message while both ends are connected: the path ends, the item still arrives, once")
    func droppedStreamMessage() throws {
        let seed = Self.seed(7_302, "droppedStreamMessage")
        var configuration = Self.configuration("dropped", steps: 0)
        configuration.longKeyLifetimes = true  // no rekey to end the stuck path instead
        let simulation = try Simulation(seed: seed, configuration: configuration)
        let folder = simulation.runFolder
        defer {
            for daemon in simulation.daemons { daemon.shutDown() }
            try? FileManager.default.removeItem(atPath: folder)
        }
        simulation.broker.faults = .none
        simulation.cutEveryLink()
        try simulation.boot(0)
        try simulation.boot(1)
        for app in simulation.apps { app.attach(on: simulation.daemons[app.daemon]) }
        let onRelay = { () -> Bool in
            simulation.daemons[0].node?.channelPathOnLoop(of: simulation.daemons[1].deviceID) == "relay"
                && simulation.daemons[1].node?.channelPathOnLoop(of: simulation.daemons[0].deviceID) == "relay"
        }
        func advance(until limit: UInt64, _ condition: () -> Bool) -> UInt64? { Self.advance(simulation, until: limit, condition) }
        #expect(advance(until: 5 * Self.second, onRelay) != nil, "on the relay at start")
        simulation.advance(by: Self.second)
        guard let sender = simulation.apps.first(where: { $0.daemon == 0 }) else {
            Issue.record("no app on d0")
            return
        }
        let deliveredBefore = simulation.context.itemsDelivered
        let lostBefore = simulation.broker.tally.lost
        // The item's stream message is the next QoS 1 message: the broker drops it, and the
        // receiver holds whatever follows on that path behind the hole.
        simulation.broker.droppingQoS1 = 1
        _ = sender.submit(7)
        sender.sendNextReliable(on: simulation.daemons[0])
        // The hole is noticed when the next stream message arrives behind it (at the latest the
        // presence renewal), then the path waits `holeTimeout`, closes, and the relay is dialled
        // 1 s later.
        let bound = 10 * Self.second
        let arrived = advance(until: bound) { simulation.context.itemsDelivered > deliveredBefore }
        print("relay simulation figure: dropped QoS 1 message: \(simulation.broker.tally.lost - lostBefore) lost by the broker, item "
              + "\(arrived.map { "handed out \($0 / 1_000_000) ms after it was sent" } ?? "never handed out") (bound \(bound / 1_000_000) ms)")
        #expect(simulation.broker.tally.lost > lostBefore, "the broker dropped a QoS 1 message")
        #expect(arrived != nil, "the item arrived within \(bound / 1_000_000) ms although the broker dropped its message")
        #expect(advance(until: 5 * Self.second, onRelay) != nil, "the channel runs on the relay again")
        try simulation.heal()
        #expect(simulation.context.violations.isEmpty, "\(simulation.context.violations.map(\.description))")
    }
}
