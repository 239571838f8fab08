import Foundation

/// Which channel path a message takes (the channel layer's datagram or its stream connection).
public enum NetworkPath: Sendable, Equatable {
    case datagram
    case stream
}

/// Something the network hands to a daemon.
public enum NetworkEvent: Sendable, Equatable {
    /// Bytes from `from` arrived at `to` on `path`, sent on channel connection `connection`.
    case message(from: Int, to: Int, bytes: [UInt8], path: NetworkPath, connection: UInt64)
    /// `node`'s channel to `peer` became active on connection `connection`.
    case channelUp(node: Int, peer: Int, connection: UInt64)
    /// `node`'s channel to `peer` went down.
    case channelDown(node: Int, peer: Int)
}

/// The simulated network between N daemons, on virtual time.
///
/// Between every two nodes there is one link with a `LinkQuality` and at most one channel
/// connection (an id, new for each connect). A connection exists while both nodes are up and the
/// link is not partitioned; a crash, a partition or an address change breaks it (both live ends
/// get `channelDown`, and what it carried is lost) and the nodes reconnect after a random delay
/// once they can (`channelUp` to both, a new id). Stream messages keep their order per
/// connection and direction; datagrams are delayed, lost, duplicated and reordered per the
/// link's quality. Every message is bound to the connection it was sent on: one arriving after
/// that connection ended is dropped, as the channel's new keys would refuse it.
public final class SimulatedNetwork {
    private struct Link {
        var partitioned = false
        var connection: UInt64?
        /// A connect attempt is scheduled (its token; a newer break invalidates older ones).
        var connectToken: UInt64 = 0
        var quality = LinkQuality.clean
        /// Latest stream arrival per direction (index 0: low→high node), for in-order delivery.
        var lastArrival: [UInt64] = [0, 0]
    }

    private enum Pending {
        case deliver(NetworkEvent, linkIndex: Int, connection: UInt64?)
        case connect(linkIndex: Int, token: UInt64)
    }

    private struct Scheduled {
        let time: UInt64
        let order: UInt64
        let what: Pending
    }

    /// Counts of what the network did, for the run summary.
    public struct Tally: Sendable, Equatable {
        public var sent = 0, delivered = 0, lost = 0, duplicated = 0, reordered = 0, droppedByBreak = 0
        public var connects = 0, breaks = 0
    }

    public let nodeCount: Int
    private let clock: VirtualClock
    /// Reconnect delays.
    private var random: SimulationRandom
    /// One stream per link (so the order in which a daemon sends to different peers does not
    /// shift another link's draws).
    private var linkRandom: [SimulationRandom]
    private var links: [Link]
    private var alive: [Bool]
    private var queue: [Scheduled] = []
    private var order: UInt64 = 0
    private var nextConnection: UInt64 = 1
    /// Reconnect delay after a link can connect again, ns.
    public var reconnectDelay: ClosedRange<UInt64> = 20_000_000...400_000_000
    public private(set) var tally = Tally()
    /// FNV-1a (64 bit) over every message the network accepted, in send order: the virtual
    /// instant, the two ends, the path, the connection and the bytes. Two runs of a seed sent
    /// the same bytes in the same order exactly when both agree (up to a hash collision): it
    /// sees what the trace does not, such as the order in which a router addressed its peers.
    public private(set) var wireDigest: UInt64 = 0xcbf2_9ce4_8422_2325

    /// `nodeCount` nodes, all down until `start(_:)`; links clean.
    public init(nodeCount: Int, clock: VirtualClock, random: SimulationRandom) {
        self.nodeCount = nodeCount
        self.clock = clock
        self.random = random.fork("reconnect")
        self.linkRandom = (0..<(nodeCount * nodeCount)).map { random.fork("link-\($0)") }
        self.links = Array(repeating: Link(), count: nodeCount * nodeCount)
        self.alive = Array(repeating: false, count: nodeCount)
    }

    private func index(_ a: Int, _ b: Int) -> Int { min(a, b) * nodeCount + max(a, b) }

    private func peers(of node: Int) -> [Int] { (0..<nodeCount).filter { $0 != node } }

    // MARK: - Faults and lifecycle

    /// `node` runs (initially or after a crash): its links connect after the reconnect delay.
    public func start(_ node: Int) {
        alive[node] = true
        for peer in peers(of: node) { scheduleConnect(index(node, peer)) }
    }

    /// `node` crashed: every connection it had breaks.
    public func crash(_ node: Int) {
        alive[node] = false
        for peer in peers(of: node) { breakLink(index(node, peer)) }
    }

    /// `node` moved to a new address: its connections break and reconnect later.
    public func changeAddress(_ node: Int) {
        for peer in peers(of: node) {
            let link = index(node, peer)
            breakLink(link)
            scheduleConnect(link)
        }
    }

    /// Cuts (or restores) the link between `a` and `b`.
    public func setPartitioned(_ a: Int, _ b: Int, _ partitioned: Bool) {
        let link = index(a, b)
        guard links[link].partitioned != partitioned else { return }
        links[link].partitioned = partitioned
        if partitioned { breakLink(link) } else { scheduleConnect(link) }
    }

    /// Restores every link and makes them clean.
    public func healAll() {
        for a in 0..<nodeCount {
            for b in (a + 1)..<nodeCount {
                links[index(a, b)].quality = .clean
                setPartitioned(a, b, false)
            }
        }
    }

    public func setQuality(_ a: Int, _ b: Int, _ quality: LinkQuality) { links[index(a, b)].quality = quality }

    public func quality(_ a: Int, _ b: Int) -> LinkQuality { links[index(a, b)].quality }

    public func isPartitioned(_ a: Int, _ b: Int) -> Bool { links[index(a, b)].partitioned }

    /// The connection between `a` and `b`, nil while there is none.
    public func connection(_ a: Int, _ b: Int) -> UInt64? { links[index(a, b)].connection }

    private func canConnect(_ link: Int) -> Bool {
        let a = link / nodeCount, b = link % nodeCount
        return alive[a] && alive[b] && !links[link].partitioned
    }

    private func scheduleConnect(_ link: Int) {
        guard canConnect(link), links[link].connection == nil else { return }
        links[link].connectToken &+= 1
        schedule(at: clock.nanoseconds + random.uint64(reconnectDelay), .connect(linkIndex: link, token: links[link].connectToken))
    }

    private func breakLink(_ link: Int) {
        links[link].connectToken &+= 1
        guard links[link].connection != nil else { return }
        links[link].connection = nil
        links[link].lastArrival = [0, 0]
        tally.breaks += 1
        let a = link / nodeCount, b = link % nodeCount
        // Told at once: a crashed end has no one to tell.
        if alive[a] { schedule(at: clock.nanoseconds, .deliver(.channelDown(node: a, peer: b), linkIndex: link, connection: nil)) }
        if alive[b] { schedule(at: clock.nanoseconds, .deliver(.channelDown(node: b, peer: a), linkIndex: link, connection: nil)) }
    }

    // MARK: - Traffic

    /// Sends `bytes` from `from` to `to`. False when there is no connection (or not the one
    /// named): the channel refused it and nothing travels.
    @discardableResult
    public func send(from: Int, to: Int, bytes: [UInt8], path: NetworkPath, connection: UInt64? = nil) -> Bool {
        let link = index(from, to)
        guard alive[from], let current = links[link].connection, connection == nil || connection == current else { return false }
        tally.sent += 1
        digest(from: from, to: to, path: path, connection: current, bytes: bytes)
        if Self.debugWire { print(Self.describe(from: from, to: to, path: path, connection: current, bytes: bytes, at: clock.nanoseconds)) }
        let quality = links[link].quality
        let event = NetworkEvent.message(from: from, to: to, bytes: bytes, path: path, connection: current)
        var random = linkRandom[link]
        defer { linkRandom[link] = random }
        let delay = random.uint64(quality.minimumDelay...quality.maximumDelay)
        switch path {
        case .stream:
            let direction = from < to ? 0 : 1
            let arrival = max(clock.nanoseconds + delay, links[link].lastArrival[direction])
            links[link].lastArrival[direction] = arrival
            schedule(at: arrival, .deliver(event, linkIndex: link, connection: current))
        case .datagram:
            if random.chance(quality.loss) {
                tally.lost += 1
                return true
            }
            var arrival = clock.nanoseconds + delay
            if random.chance(quality.reordering) {
                tally.reordered += 1
                arrival += random.uint64(0...quality.reorderDelay)
            }
            schedule(at: arrival, .deliver(event, linkIndex: link, connection: current))
            if random.chance(quality.duplication) {
                tally.duplicated += 1
                schedule(at: arrival + random.uint64(0...quality.maximumDelay), .deliver(event, linkIndex: link, connection: current))
            }
        }
        return true
    }

    /// `MESH_SIM_DEBUG_WIRE` set: every message sent is printed (`describe`), so the runs of two
    /// processes whose wire digests differ can be compared line by line.
    private static let debugWire = ProcessInfo.processInfo.environment["MESH_SIM_DEBUG_WIRE"] != nil

    /// `wire @<virtual ns> d<from>→d<to> <path> #<connection> <count> bytes: <the first 48, hex>`.
    static func describe(from: Int, to: Int, path: NetworkPath, connection: UInt64, bytes: [UInt8], at time: UInt64) -> String {
        let hex = bytes.prefix(48).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined(separator: " ")
        return "wire @\(time) d\(from)→d\(to) \(path) #\(connection) \(bytes.count) bytes: \(hex)\(bytes.count > 48 ? " …" : "")"
    }

    /// Folds one sent message into `wireDigest`.
    private func digest(from: Int, to: Int, path: NetworkPath, connection: UInt64, bytes: [UInt8]) {
        var hash = wireDigest
        func mix(_ value: UInt64) {
            for shift in stride(from: 0, to: 64, by: 8) { hash = (hash ^ (value >> UInt64(shift) & 0xFF)) &* 0x100_0000_01b3 }
        }
        mix(clock.nanoseconds)
        mix(UInt64(from) << 32 | UInt64(to) << 1 | (path == .stream ? 1 : 0))
        mix(connection)
        mix(UInt64(bytes.count))
        bytes.withUnsafeBufferPointer { buffer in
            for byte in buffer { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        }
        wireDigest = hash
    }

    private func schedule(at time: UInt64, _ what: Pending) {
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

    /// The next event due at the clock's current time (connects are performed on the way), nil
    /// when nothing more is due now.
    public func nextDue() -> NetworkEvent? {
        while let first = queue.first, first.time <= clock.nanoseconds {
            queue.removeFirst()
            switch first.what {
            case .connect(let link, let token):
                guard token == links[link].connectToken, canConnect(link), links[link].connection == nil else { continue }
                let id = nextConnection
                nextConnection += 1
                links[link].connection = id
                tally.connects += 1
                let a = link / nodeCount, b = link % nodeCount
                schedule(at: clock.nanoseconds, .deliver(.channelUp(node: a, peer: b, connection: id), linkIndex: link, connection: id))
                schedule(at: clock.nanoseconds, .deliver(.channelUp(node: b, peer: a, connection: id), linkIndex: link, connection: id))
            case .deliver(let event, let link, let connection):
                if let connection, links[link].connection != connection {
                    if case .message = event { tally.droppedByBreak += 1 }
                    continue
                }
                if case .message = event { tally.delivered += 1 }
                return event
            }
        }
        return nil
    }
}
