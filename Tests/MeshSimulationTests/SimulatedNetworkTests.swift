import MeshDaemon
import MeshSimulation
import NIOCore
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

    static func started(seed: UInt64 = 1, nodes: Int = 2) -> (SimulatedNetwork, VirtualClock) {
        let clock = VirtualClock()
        let network = SimulatedNetwork(nodeCount: nodes, clock: clock, random: SimulationRandom(seed: seed))
        for node in 0..<nodes { network.start(node) }
        return (network, clock)
    }

    /// Dials from `from` to `to` and returns the connection once both ends know it.
    static func connect(_ network: SimulatedNetwork, _ clock: VirtualClock, from: Int, to: Int) -> UInt64? {
        let attempt = network.dial(from: from, to: network.addresses[to], kind: .channel, timeout: 2_000_000_000)
        let events = drain(network, clock, until: clock.nanoseconds + 1_000_000_000)
        for case .dialed(from, attempt, let connection?, nil) in events { return connection }
        return nil
    }

    static func frames(_ events: [NetworkEvent], to node: Int) -> [UInt8] {
        events.compactMap { if case .stream(node, _, .frame(let bytes)) = $0 { bytes.first } else { nil } }
    }

    static func datagrams(_ events: [NetworkEvent], to node: Int) -> [UInt8] {
        events.compactMap { if case .datagram(node, _, let bytes) = $0 { bytes.first } else { nil } }
    }

    @Test("a dial reaches the listener with its preamble first, and both ends know the connection")
    func connects() {
        let (network, clock) = Self.started()
        let attempt = network.dial(from: 0, to: network.addresses[1], kind: .channel, timeout: 2_000_000_000)
        let events = Self.drain(network, clock, until: clock.nanoseconds + 1_000_000_000)
        guard case .accepted(1, let id, let remote)? = events.first(where: { if case .accepted = $0 { true } else { false } }) else {
            Issue.record("no accept in \(events)")
            return
        }
        #expect(remote.ipAddress == network.addresses[0].ipAddress)
        #expect(events.contains(.dialed(to: 0, attempt: attempt, connection: id, failure: nil)))
        #expect(events.contains(.stream(to: 1, connection: id, arrival: .preamble(.channel))))
    }

    @Test("stream frames arrive in order over a jittery link; datagrams may be lost, doubled and reordered")
    func paths() throws {
        let (network, clock) = Self.started()
        network.setQuality(0, 1, LinkQuality(minimumDelay: 1_000_000, maximumDelay: 50_000_000, loss: 0.3, duplication: 0.3,
                                              reordering: 0.3, reorderDelay: 40_000_000))
        let id = try #require(Self.connect(network, clock, from: 0, to: 1))
        for value in 0..<200 { #expect(network.sendStream([UInt8(value)], on: id, from: 0)) }
        let stream = Self.frames(Self.drain(network, clock, until: clock.nanoseconds + 5_000_000_000), to: 1)
        #expect(stream == (0..<200).map { UInt8($0) })
        for value in 0..<200 { network.sendDatagram(from: 0, to: network.addresses[1], bytes: [UInt8(value)]) }
        let datagrams = Self.datagrams(Self.drain(network, clock, until: clock.nanoseconds + 5_000_000_000), to: 1)
        #expect(datagrams != datagrams.sorted())
        #expect(Set(datagrams).count < 200)
        #expect(datagrams.count > Set(datagrams).count)
        #expect(network.tally.lost > 0 && network.tally.duplicated > 0 && network.tally.reordered > 0)
    }

    @Test("a cut link holds stream frames until it is restored, loses datagrams, and times dials out")
    func partition() throws {
        let (network, clock) = Self.started()
        let id = try #require(Self.connect(network, clock, from: 0, to: 1))
        network.setPartitioned(0, 1, true)
        network.sendStream([9], on: id, from: 0)
        network.sendDatagram(from: 0, to: network.addresses[1], bytes: [8])
        let attempt = network.dial(from: 0, to: network.addresses[1], kind: .channel, timeout: 2_000_000_000)
        let cut = Self.drain(network, clock, until: clock.nanoseconds + 3_000_000_000)
        #expect(Self.frames(cut, to: 1).isEmpty && Self.datagrams(cut, to: 1).isEmpty)
        #expect(cut.contains(.dialed(to: 0, attempt: attempt, connection: nil, failure: "timed out")))
        network.setPartitioned(0, 1, false)
        let healed = Self.drain(network, clock, until: clock.nanoseconds + 1_000_000_000)
        #expect(Self.frames(healed, to: 1) == [9])
    }

    @Test("a crashed node's peers read the end of their streams; a dial to it is refused")
    func crash() throws {
        let (network, clock) = Self.started(nodes: 3)
        let first = try #require(Self.connect(network, clock, from: 0, to: 2))
        network.crash(2)
        let events = Self.drain(network, clock, until: clock.nanoseconds + 1_000_000_000)
        #expect(events.contains(.stream(to: 0, connection: first, arrival: .end)))
        #expect(!events.contains { $0.node == 2 })
        let attempt = network.dial(from: 0, to: network.addresses[2], kind: .channel, timeout: 2_000_000_000)
        let refused = Self.drain(network, clock, until: clock.nanoseconds + 1_000_000_000)
        #expect(refused.contains(.dialed(to: 0, attempt: attempt, connection: nil, failure: "connection refused")))
        network.start(2)
        #expect(Self.connect(network, clock, from: 0, to: 2) != nil)
    }

    @Test("an address move closes the mover's ends at once, its peers hear nothing, and its name resolves to the new address")
    func move() throws {
        let (network, clock) = Self.started()
        let id = try #require(Self.connect(network, clock, from: 0, to: 1))
        let old = network.addresses[1]
        network.changeAddress(1)
        #expect(network.addresses[1] != old && network.node(named: "d1") == 1 && network.node(at: old) == nil)
        network.sendStream([5], on: id, from: 0)
        network.sendDatagram(from: 0, to: old, bytes: [6])
        let events = Self.drain(network, clock, until: clock.nanoseconds + 1_000_000_000)
        #expect(events.contains(.stream(to: 1, connection: id, arrival: .end)))
        #expect(!events.contains { $0.node == 0 })
        #expect(Self.frames(events, to: 1).isEmpty && Self.datagrams(events, to: 1).isEmpty)
        network.sendDatagram(from: 1, to: network.addresses[0], bytes: [7])
        let moved = Self.drain(network, clock, until: clock.nanoseconds + 1_000_000_000)
        #expect(moved.contains(.datagram(to: 0, source: network.addresses[1], bytes: [7])))
    }

    @Test("the same seed gives the same deliveries")
    func reproducible() {
        func run() -> [NetworkEvent] {
            let (network, clock) = Self.started(seed: 11, nodes: 3)
            network.setQuality(0, 2, LinkQuality(minimumDelay: 0, maximumDelay: 30_000_000, loss: 0.2, duplication: 0.2,
                                                 reordering: 0.2, reorderDelay: 10_000_000))
            let connection = Self.connect(network, clock, from: 0, to: 2) ?? 0
            for value in 0..<50 {
                network.sendDatagram(from: value % 3, to: network.addresses[(value + 1) % 3], bytes: [UInt8(value)])
                network.sendStream([UInt8(value)], on: connection, from: value % 2 == 0 ? 0 : 2)
                if value == 25 { network.changeAddress(1) }
            }
            return Self.drain(network, clock, until: clock.nanoseconds + 3_000_000_000)
        }
        #expect(run() == run())
    }
}
