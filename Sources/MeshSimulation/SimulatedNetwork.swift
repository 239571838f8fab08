import Foundation
import MeshCore
import NIOCore

/// The simulated network between N nodes, on virtual time: addresses, datagrams, stream
/// connections, partitions, link qualities, crashes and address moves.
///
/// Every node has an IPv4 address (`10.0.G.N+1`, port 47470; `G` grows with each move) and a
/// name (`dN`, which resolves to its current address, as discovery would tell). Between every
/// two nodes there is one link with a `LinkQuality`, cut or not.
///
/// - **Datagrams** go to an address: delayed, lost, duplicated and reordered per the link's
///   quality, lost while the link is cut, dropped when nobody holds that address any more.
/// - **Stream connections** are dialled to an address (`SimulatedNetwork+Streams.swift`): the
///   frames of each direction arrive in order, while the link is cut they wait (TCP
///   retransmits), and a close reaches the other end after what was sent before it.
/// - A **crash** closes the node's ends (its peers read the end of their streams); an
///   **address move** kills its connections: the mover's ends close at once, its peers hear
///   nothing more on theirs (their keepalives and leases find out), and what it sends comes
///   from the new address.
///
/// - A **relay route** (`SimulatedNetwork+Relay.swift`), off unless a test turns it on,
///   stands for the MQTT broker between two nodes: each node also holds a relay address, and
///   what goes to it crosses the pair's relay route, up or down independently of the link.
///
/// Nothing here knows of channels, handshakes or keys: the nodes' real `MeshNode`s run over it
/// (`SimulatedTransport`).
public final class SimulatedNetwork {
    struct Link {
        var partitioned = false
        var quality = LinkQuality.clean
        /// The pair's relay route carries traffic (`setRelay`).
        var relayUp = false
    }

    enum Pending {
        /// A datagram for whoever holds `address` at arrival.
        case datagram(to: Int, address: SocketAddress, source: SocketAddress, bytes: [UInt8])
        /// The head of one direction of a connection is due (`direction` 0: dialer → acceptor).
        case pump(connection: UInt64, direction: Int)
        /// A dial's first packet reaches the acceptor's side.
        case connect(attempt: UInt64)
        /// An event to hand out as it is.
        case event(NetworkEvent)
    }

    struct Scheduled {
        let time: UInt64
        let order: UInt64
        let what: Pending
    }

    /// Counts of what the network did, for the run summary.
    public struct Tally: Sendable, Equatable {
        public var sent = 0, delivered = 0, lost = 0, duplicated = 0, reordered = 0, droppedByBreak = 0
        /// Connections opened, and connections a crash, a close or a move ended.
        public var connects = 0, breaks = 0
        /// Dials refused or timed out.
        public var dialsFailed = 0
        /// Address moves.
        public var moves = 0
    }

    /// The port every node listens on.
    public static let port = 47_470
    public let nodeCount: Int
    let clock: VirtualClock
    /// One stream per link (so the order in which a node sends to different peers does not
    /// shift another link's draws).
    var linkRandom: [SimulationRandom]
    var links: [Link]
    /// Whether each node's process runs (listens and answers).
    var alive: [Bool]
    /// Each node's address generation and current address.
    var generation: [Int]
    public private(set) var addresses: [SocketAddress]
    /// Each node's device ID (a relay route names the peer, not an address); the simulation sets it.
    public var deviceIDs: [DeviceID] = []
    /// Whether the nodes have a relay configured: they dial it when no direct path works.
    public var relayConfigured = false
    /// Who holds each current address.
    var holders: [SocketAddress: Int] = [:]
    var queue: [Scheduled] = []
    var order: UInt64 = 0
    var connections: [UInt64: SimulatedConnection] = [:]
    var nextConnection: UInt64 = 1
    var dials: [UInt64: SimulatedDial] = [:]
    var nextAttempt: UInt64 = 1
    public internal(set) var tally = Tally()
    /// FNV-1a (64 bit) over every message the network accepted, in send order: the virtual
    /// instant, the two ends, the path, the connection and the bytes. Two runs of a seed sent
    /// the same bytes in the same order exactly when both agree (up to a hash collision): it
    /// sees what the trace does not, such as the order in which a node addressed its peers.
    public internal(set) var wireDigest: UInt64 = 0xcbf2_9ce4_8422_2325
    /// The largest delay asymmetry any link had in the run (max − min delay plus the reorder
    /// hold-back, ns): what bounds the error of a clock offset estimate from its round trips.
    public private(set) var worstAsymmetry: UInt64 = LinkQuality.clean.asymmetry

    /// `nodeCount` nodes, all down until `start(_:)`; links clean.
    public init(nodeCount: Int, clock: VirtualClock, random: SimulationRandom) {
        self.nodeCount = nodeCount
        self.clock = clock
        linkRandom = (0..<(nodeCount * nodeCount)).map { random.fork("link-\($0)") }
        links = Array(repeating: Link(), count: nodeCount * nodeCount)
        alive = Array(repeating: false, count: nodeCount)
        generation = Array(repeating: 0, count: nodeCount)
        addresses = (0..<nodeCount).map { Self.address(node: $0, generation: 0) }
        for (node, address) in addresses.enumerated() { holders[address] = node }
        for node in 0..<nodeCount { holders[Self.relayAddress(node: node)] = node }
    }

    static func address(node: Int, generation: Int) -> SocketAddress {
        do {
            return try SocketAddress(ipAddress: "10.\(generation / 250 % 250).\(generation % 250).\(node + 1)", port: port)
        } catch {
            preconditionFailure("SimulatedNetwork: a literal IPv4 address did not parse: \(error)")
        }
    }

    func link(_ a: Int, _ b: Int) -> Int { min(a, b) * nodeCount + max(a, b) }

    /// The node named `name` (`d0`, `d1`, …), or holding the IP text `name` now.
    public func node(named name: String) -> Int? {
        if name.hasPrefix("d"), let index = Int(name.dropFirst()), (0..<nodeCount).contains(index) { return index }
        return addresses.firstIndex { $0.ipAddress == name }
    }

    /// The node holding `address` now (nil: nobody).
    public func node(at address: SocketAddress) -> Int? { holders[address] }

    // MARK: - Nodes and links

    /// `node`'s process runs: it listens and answers.
    public func start(_ node: Int) { alive[node] = true }

    /// `node` crashed: every end of a connection it had closes (its peers read the end after
    /// what was in flight), its dials are forgotten.
    public func crash(_ node: Int) {
        alive[node] = false
        for id in connections.keys.sorted() { closeEnd(id, node: node) }
        for attempt in dials.keys.sorted() where dials[attempt]?.from == node { dials[attempt] = nil }
    }

    /// `node` moved to a new address: its connections die (its own ends close at once, its
    /// peers' ends hear nothing more), and it sends from and listens at the new address.
    public func changeAddress(_ node: Int) {
        tally.moves += 1
        holders[addresses[node]] = nil
        generation[node] += 1
        addresses[node] = Self.address(node: node, generation: generation[node])
        holders[addresses[node]] = node
        for id in connections.keys.sorted() { kill(id, mover: node) }
    }

    /// Cuts (or restores) the link between `a` and `b`: while cut, datagrams are lost, dials
    /// time out and stream frames wait.
    public func setPartitioned(_ a: Int, _ b: Int, _ partitioned: Bool) { links[link(a, b)].partitioned = partitioned }

    /// Restores every link and makes them clean.
    public func healAll() {
        for a in 0..<nodeCount {
            for b in (a + 1)..<nodeCount {
                links[link(a, b)].quality = .clean
                links[link(a, b)].partitioned = false
            }
        }
    }

    public func setQuality(_ a: Int, _ b: Int, _ quality: LinkQuality) {
        links[link(a, b)].quality = quality
        worstAsymmetry = max(worstAsymmetry, quality.asymmetry)
    }

    public func quality(_ a: Int, _ b: Int) -> LinkQuality { links[link(a, b)].quality }

    public func isPartitioned(_ a: Int, _ b: Int) -> Bool { links[link(a, b)].partitioned }

    /// Whether `from` can reach `to` now (both distinct, the link not cut; through the relay:
    /// the pair's relay route up).
    func reachable(_ from: Int, _ to: Int, relay: Bool = false) -> Bool {
        from != to && (relay ? links[link(from, to)].relayUp : !links[link(from, to)].partitioned)
    }

    /// One delay draw on the link between `a` and `b`.
    func delay(_ a: Int, _ b: Int) -> UInt64 {
        let index = link(a, b), quality = links[index].quality
        return linkRandom[index].uint64(quality.minimumDelay...quality.maximumDelay)
    }

    // MARK: - Datagrams

    /// Sends a datagram from `from` (from its current address) to `address`: delivered to
    /// whoever holds that address at arrival, per the link's quality; lost when nobody holds
    /// it now or the link is cut.
    public func sendDatagram(from: Int, to address: SocketAddress, bytes: [UInt8]) {
        guard alive[from] else { return }
        tally.sent += 1
        let target = holders[address]
        digest(from: from, to: target ?? nodeCount, path: .datagram, connection: 0, bytes: bytes)
        if Self.debugWire {
            print(Self.describe(from: from, to: target ?? nodeCount, path: .datagram, connection: 0, bytes: bytes, at: clock.nanoseconds))
        }
        let relay = Self.isRelayAddress(address)
        guard let target, reachable(from, target, relay: relay) else {
            tally.lost += 1
            return
        }
        let index = link(from, target), quality = links[index].quality
        let source = relay ? Self.relayAddress(node: from) : addresses[from]
        let event = Pending.datagram(to: target, address: address, source: source, bytes: bytes)
        var random = linkRandom[index]
        defer { linkRandom[index] = random }
        let delay = random.uint64(quality.minimumDelay...quality.maximumDelay)
        if random.chance(quality.loss) {
            tally.lost += 1
            return
        }
        var arrival = clock.nanoseconds + delay
        if random.chance(quality.reordering) {
            tally.reordered += 1
            arrival += random.uint64(0...quality.reorderDelay)
        }
        schedule(at: arrival, event)
        if random.chance(quality.duplication) {
            tally.duplicated += 1
            schedule(at: arrival + random.uint64(0...quality.maximumDelay), event)
        }
    }

    // MARK: - The schedule

    func schedule(at time: UInt64, _ what: Pending) {
        order &+= 1
        let item = Scheduled(time: time, order: order, what: what)
        var low = 0, high = queue.count
        while low < high {
            let mid = (low + high) / 2
            if queue[mid].time < time || (queue[mid].time == time && queue[mid].order < item.order) { low = mid + 1 } else { high = mid }
        }
        queue.insert(item, at: low)
    }

    /// When the next thing happens on the network, nil when nothing is scheduled.
    public var nextTime: UInt64? { queue.first?.time }

    /// The next event due at the clock's current time, nil when nothing more is due now.
    public func nextDue() -> NetworkEvent? {
        while let first = queue.first, first.time <= clock.nanoseconds {
            queue.removeFirst()
            if let event = perform(first.what) { return event }
        }
        return nil
    }

    private func perform(_ what: Pending) -> NetworkEvent? {
        switch what {
        case .datagram(let to, let address, let source, let bytes):
            guard alive[to], holders[address] == to else {
                tally.droppedByBreak += 1
                return nil
            }
            tally.delivered += 1
            return .datagram(to: to, source: source, bytes: bytes)
        case .pump(let connection, let direction):
            return pump(connection, direction: direction)
        case .connect(let attempt):
            return connect(attempt)
        case .event(let event):
            return event
        }
    }
}
