import MeshSimulation
import Testing

@Suite("Simulation network")
struct SimulatedNetworkTests {
    /// Runs the network until `until`, returning the events in delivery order.
    static func drain(_ network: SimulatedNetwork, _ clock: VirtualClock, until: UInt64) -> [NetworkEvent] {
        var events: [NetworkEvent] = []
        for _ in 0..<100_000 {
            guard let next = network.nextTime, next <= until else { break }
            clock.advance(to: next)
            while let event = network.nextDue() { events.append(event) }
        }
        clock.advance(to: until)
        return events
    }

    static func connected(seed: UInt64 = 1, nodes: Int = 2) -> (SimulatedNetwork, VirtualClock) {
        let clock = VirtualClock()
        let network = SimulatedNetwork(nodeCount: nodes, clock: clock, random: SimulationRandom(seed: seed))
        for node in 0..<nodes { network.start(node) }
        _ = drain(network, clock, until: clock.nanoseconds + 1_000_000_000)
        return (network, clock)
    }

    static func payloads(_ events: [NetworkEvent], to node: Int) -> [UInt8] {
        events.compactMap { if case .message(_, node, let bytes, _, _) = $0 { bytes.first } else { nil } }
    }

    @Test("nodes that start connect, and both ends hear of it with the same connection")
    func connects() {
        let clock = VirtualClock()
        let network = SimulatedNetwork(nodeCount: 2, clock: clock, random: SimulationRandom(seed: 3))
        network.start(0)
        network.start(1)
        #expect(!network.send(from: 0, to: 1, bytes: [1], path: .stream))
        let events = Self.drain(network, clock, until: clock.nanoseconds + 1_000_000_000)
        let id = network.connection(0, 1)
        #expect(id != nil)
        #expect(events.contains(.channelUp(node: 0, peer: 1, connection: id ?? 0)))
        #expect(events.contains(.channelUp(node: 1, peer: 0, connection: id ?? 0)))
    }

    @Test("stream messages arrive in order over a jittery link; datagrams may be lost, doubled and reordered")
    func paths() {
        let (network, clock) = Self.connected()
        network.setQuality(0, 1, LinkQuality(minimumDelay: 1_000_000, maximumDelay: 50_000_000, loss: 0.3, duplication: 0.3,
                                              reordering: 0.3, reorderDelay: 40_000_000))
        for value in 0..<200 { #expect(network.send(from: 0, to: 1, bytes: [UInt8(value)], path: .stream)) }
        let stream = Self.payloads(Self.drain(network, clock, until: clock.nanoseconds + 5_000_000_000), to: 1)
        #expect(stream == (0..<200).map { UInt8($0) })
        for value in 0..<200 { network.send(from: 0, to: 1, bytes: [UInt8(value)], path: .datagram) }
        let datagrams = Self.payloads(Self.drain(network, clock, until: clock.nanoseconds + 5_000_000_000), to: 1)
        #expect(datagrams.count != 200 || datagrams != datagrams.sorted())
        #expect(Set(datagrams).count < 200)
        #expect(datagrams.count > Set(datagrams).count)
        #expect(network.tally.lost > 0 && network.tally.duplicated > 0 && network.tally.reordered > 0)
    }

    @Test("a partition breaks the connection, drops what it carried, and healing reconnects with a new id")
    func partition() {
        let (network, clock) = Self.connected()
        let first = network.connection(0, 1)
        network.send(from: 0, to: 1, bytes: [9], path: .stream)
        network.setPartitioned(0, 1, true)
        #expect(!network.send(from: 0, to: 1, bytes: [8], path: .stream))
        let cut = Self.drain(network, clock, until: clock.nanoseconds + 2_000_000_000)
        #expect(Self.payloads(cut, to: 1).isEmpty)
        #expect(cut.contains(.channelDown(node: 0, peer: 1)) && cut.contains(.channelDown(node: 1, peer: 0)))
        #expect(network.connection(0, 1) == nil)
        network.setPartitioned(0, 1, false)
        _ = Self.drain(network, clock, until: clock.nanoseconds + 1_000_000_000)
        let second = network.connection(0, 1)
        #expect(second != nil && second != first)
        #expect(!network.send(from: 0, to: 1, bytes: [7], path: .stream, connection: first))
    }

    @Test("a crashed node's peers hear the channel go down; it reconnects once restarted")
    func crash() {
        let (network, clock) = Self.connected(nodes: 3)
        network.crash(2)
        let events = Self.drain(network, clock, until: clock.nanoseconds + 1_000_000_000)
        #expect(events.contains(.channelDown(node: 0, peer: 2)) && events.contains(.channelDown(node: 1, peer: 2)))
        #expect(!events.contains { if case .channelDown(2, _) = $0 { true } else { false } })
        #expect(network.connection(0, 1) != nil)
        network.start(2)
        _ = Self.drain(network, clock, until: clock.nanoseconds + 1_000_000_000)
        #expect(network.connection(0, 2) != nil && network.connection(1, 2) != nil)
    }

    @Test("the same seed gives the same deliveries")
    func reproducible() {
        func run() -> [NetworkEvent] {
            let (network, clock) = Self.connected(seed: 11, nodes: 3)
            network.setQuality(0, 2, LinkQuality(minimumDelay: 0, maximumDelay: 30_000_000, loss: 0.2, duplication: 0.2,
                                                 reordering: 0.2, reorderDelay: 10_000_000))
            for value in 0..<50 {
                network.send(from: value % 3, to: (value + 1) % 3, bytes: [UInt8(value)], path: value % 2 == 0 ? .datagram : .stream)
                if value == 25 { network.changeAddress(1) }
            }
            return Self.drain(network, clock, until: clock.nanoseconds + 3_000_000_000)
        }
        #expect(run() == run())
    }
}
