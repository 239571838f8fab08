import MeshCore
import MeshDaemon

/// The relay in a run: every node's real `RelayTransport` and `RelayMailbox` over the run's
/// `SimulatedBroker` (when `network.relayConfigured`), the broker's outages, and the
/// broker-only runs of `SimulationConfiguration.brokerOnly`.
extension Simulation {
    /// The broker's name in relay addresses (`relay sim-broker` in `meshctl peers`).
    static var relaySettings: RelaySettings {
        RelaySettings(url: RelayURL(useTLS: false, host: SimulatedNetwork.relayBroker, port: 1883))
    }

    /// The share of seeds whose nodes have a relay (the others run as without one, so a bug
    /// the relay would hide, such as a dial round never retried, still shows).
    static let relayShare = 0.5
    /// The share of relay seeds whose broker misbehaves (faults and outages): 30 % of all seeds.
    static let brokerFaultShare = 0.6

    /// What the seed picks for the broker: whether it misbehaves, and how.
    static func brokerFaults(_ random: inout SimulationRandom) -> BrokerFaults {
        random.chance(brokerFaultShare) ? BrokerFaults.random(using: &random) : .none
    }

    /// Daemon `index`'s node configuration with the relay, when the run has one.
    func configureRelay(_ configuration: inout DaemonConfiguration) {
        guard network.relayConfigured else { return }
        configuration.relay = Self.relaySettings
    }

    /// The factory of the nodes' broker connections (nil without a relay: no relay runs).
    var relayBrokers: (any RelayBrokerFactory)? { network.relayConfigured ? broker : nil }

    /// After each step: an outage begins or ends (seeded), and a broker-only run keeps every
    /// link cut.
    func stepBroker() {
        if configuration.brokerOnly { cutEveryLink() }
        guard network.relayConfigured else { return }
        let now = context.clock.nanoseconds
        if broker.down {
            guard let upAt = broker.upAt, now >= upAt else { return }
            broker.setDown(false)
            context.note("broker back up")
        } else if brokerRandom.chance(broker.faults.outagePerStep) {
            broker.setDown(true)
            broker.upAt = now + brokerRandom.uint64(broker.faults.outageLength)
            context.faults += 1
            context.note("broker down")
        }
    }

    /// The healing phase's broker: honest and up (and in a broker-only run, still the only path).
    func healBroker() {
        broker.heal()
        if configuration.brokerOnly { cutEveryLink() }
    }

    func cutEveryLink() {
        for a in 0..<daemons.count {
            for b in (a + 1)..<daemons.count { network.setPartitioned(a, b, true) }
        }
    }
}
