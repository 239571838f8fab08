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
        func advance(until limit: UInt64, _ condition: () -> Bool) -> UInt64? {
            let start = simulation.context.clock.nanoseconds
            while simulation.context.clock.nanoseconds - start <= limit {
                if condition() { return simulation.context.clock.nanoseconds - start }
                simulation.advance(by: 10_000_000)
            }
            return nil
        }
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
}
