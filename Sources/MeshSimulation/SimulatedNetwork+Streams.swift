import Foundation
import MeshDaemon
import NIOCore

/// One stream connection between two nodes: per direction a queue of what is in flight, in
/// order (index 0: dialer → acceptor).
struct SimulatedConnection {
    let id: UInt64
    /// The two nodes: `ends[0]` dialled, `ends[1]` accepted.
    let ends: [Int]
    /// Each end's address when the connection opened.
    let addresses: [SocketAddress]
    /// Whether it runs through the pair's relay route (dialled to a relay address).
    var relay = false
    /// Whether each end is still open (its node has not closed it, crashed or moved).
    var open = [true, true]
    /// An address move killed it: nothing more crosses, no end hears of the other.
    var dead = false
    /// What travels in each direction, in order, with the earliest instant it may arrive.
    var inFlight: [[(time: UInt64, arrival: StreamArrival)]] = [[], []]
    /// Whether a pump is scheduled for each direction.
    var pumping = [false, false]

    /// Which end `node` is (0 or 1); nil when it is neither.
    func end(of node: Int) -> Int? { ends.firstIndex(of: node) }
}

/// A dial under way: from which node, to which, of what kind.
struct SimulatedDial {
    let from: Int
    let to: Int?
    let kind: ConnectionKind
    let timeout: UInt64
    let startedAt: UInt64
    /// Dialled to a relay address: it goes through the pair's relay route.
    var relay = false
}

extension SimulatedNetwork {
    /// How long a cut link holds a stream frame back before the next try (TCP's retransmission).
    static let retransmitInterval: UInt64 = 200_000_000

    /// Starts a dial from `from` to `address` (a node's current address, or nobody's) with the
    /// connecting side's preamble `kind`: `.dialed` comes back after a round trip, with the
    /// connection, or "connection refused" when nothing listens there; after `timeout` with
    /// "timed out" when the address has no holder or the link is cut.
    public func dial(from: Int, to address: SocketAddress, kind: ConnectionKind, timeout: UInt64) -> UInt64 {
        let attempt = nextAttempt
        nextAttempt += 1
        let target = holders[address], relay = Self.isRelayAddress(address)
        dials[attempt] = SimulatedDial(from: from, to: target, kind: kind, timeout: timeout, startedAt: clock.nanoseconds,
                                       relay: relay)
        guard let target, reachable(from, target, relay: relay) else {
            schedule(at: clock.nanoseconds + timeout, .event(failDial(attempt, "timed out")))
            tally.dialsFailed += 1
            dials[attempt] = nil
            return attempt
        }
        schedule(at: clock.nanoseconds + delay(from, target), .connect(attempt: attempt))
        return attempt
    }

    /// Forgets `attempt` and counts it failed; the event that tells its dialer.
    private func failDial(_ attempt: UInt64, _ reason: String) -> NetworkEvent {
        let from = dials[attempt]?.from ?? 0
        return .dialed(to: from, attempt: attempt, connection: nil, failure: reason)
    }

    /// A dial's first packet arrives: the acceptor's listener takes it (or refuses it).
    func connect(_ attempt: UInt64) -> NetworkEvent? {
        guard let dial = dials[attempt], let target = dial.to else { return nil }
        guard alive[dial.from] else {
            dials[attempt] = nil
            return nil
        }
        let elapsed = clock.nanoseconds - dial.startedAt
        let targetAddress = dial.relay ? Self.relayAddress(node: target) : addresses[target]
        guard reachable(dial.from, target, relay: dial.relay), holders[targetAddress] == target else {
            schedule(at: dial.startedAt + max(dial.timeout, elapsed), .event(failDial(attempt, "timed out")))
            tally.dialsFailed += 1
            dials[attempt] = nil
            return nil
        }
        let back = delay(dial.from, target)
        guard alive[target] else {
            tally.dialsFailed += 1
            dials[attempt] = nil
            schedule(at: clock.nanoseconds + back, .event(.dialed(to: dial.from, attempt: attempt, connection: nil,
                                                                   failure: "connection refused")))
            return nil
        }
        let id = nextConnection
        nextConnection += 1
        // The dialer's port: any, but fixed per connection.
        let dialerHost = dial.relay ? Self.relayAddress(node: dial.from) : addresses[dial.from]
        let dialerAddress = (try? SocketAddress(ipAddress: dialerHost.ipAddress ?? "10.0.0.1",
                                                port: 32_768 + Int(id % 28_000))) ?? dialerHost
        var connection = SimulatedConnection(id: id, ends: [dial.from, target], addresses: [dialerAddress, targetAddress])
        connection.relay = dial.relay
        connection.inFlight[0].append((clock.nanoseconds, .preamble(dial.kind)))
        connections[id] = connection
        tally.connects += 1
        dials[attempt] = nil
        digest(from: dial.from, to: target, path: .stream, connection: id, bytes: [0x53, 0x4D, ConnectionKind.version, dial.kind.rawValue])
        schedule(at: clock.nanoseconds + back, .event(.dialed(to: dial.from, attempt: attempt, connection: id, failure: nil)))
        startPump(id, direction: 0)
        return .accepted(to: target, connection: id, remote: dialerAddress)
    }

    /// The address of the other end of `connection`, as `node` sees it.
    public func remoteAddress(of connection: UInt64, at node: Int) -> SocketAddress? {
        guard let found = connections[connection], let end = found.end(of: node) else { return nil }
        return found.addresses[1 - end]
    }

    /// The address of `node`'s own end of `connection`.
    public func localAddress(of connection: UInt64, at node: Int) -> SocketAddress? {
        guard let found = connections[connection], let end = found.end(of: node) else { return nil }
        return found.addresses[end]
    }

    /// `node` writes `frame` on its end of `connection`: it arrives at the other end after what
    /// was written before. False when that end is closed (nothing is sent).
    @discardableResult
    public func sendStream(_ frame: [UInt8], on connection: UInt64, from node: Int) -> Bool {
        guard var found = connections[connection], let end = found.end(of: node), found.open[end] else { return false }
        let to = found.ends[1 - end]
        tally.sent += 1
        digest(from: node, to: to, path: .stream, connection: connection, bytes: frame)
        if Self.debugWire { print(Self.describe(from: node, to: to, path: .stream, connection: connection, bytes: frame, at: clock.nanoseconds)) }
        guard !found.dead else {
            tally.droppedByBreak += 1
            return true
        }
        let last = found.inFlight[end].last?.time ?? 0
        found.inFlight[end].append((max(clock.nanoseconds + delay(node, to), last), .frame(frame)))
        connections[connection] = found
        startPump(connection, direction: end)
        return true
    }

    /// `node` closes its end of `connection`: the other end reads the end after what was sent.
    public func closeEnd(_ connection: UInt64, node: Int) {
        guard var found = connections[connection], let end = found.end(of: node), found.open[end] else { return }
        found.open[end] = false
        tally.breaks += found.open[1 - end] ? 1 : 0
        if !found.dead, found.open[1 - end] {
            let last = found.inFlight[end].last?.time ?? 0
            found.inFlight[end].append((max(clock.nanoseconds + delay(node, found.ends[1 - end]), last), .end))
        }
        connections[connection] = found
        startPump(connection, direction: end)
        forgetIfDone(connection)
    }

    /// An address move of `mover` kills `connection` if it is one of its ends.
    func kill(_ connection: UInt64, mover: Int) {
        guard var found = connections[connection], let end = found.end(of: mover), !found.dead else { return }
        found.dead = true
        tally.droppedByBreak += found.inFlight[0].count + found.inFlight[1].count
        found.inFlight = [[], []]
        if found.open[end] {
            found.open[end] = false
            tally.breaks += 1
            // The mover's own side notices at once: its address went away.
            if alive[mover] { schedule(at: clock.nanoseconds, .event(.stream(to: mover, connection: connection, arrival: .end))) }
        }
        connections[connection] = found
        forgetIfDone(connection)
    }

    private func startPump(_ connection: UInt64, direction: Int) {
        guard var found = connections[connection], !found.pumping[direction], let head = found.inFlight[direction].first else { return }
        found.pumping[direction] = true
        connections[connection] = found
        schedule(at: max(head.time, clock.nanoseconds), .pump(connection: connection, direction: direction))
    }

    /// The head of one direction is due: delivered (the rest follows in order), held while the
    /// link is cut, dropped when the receiving end is closed.
    func pump(_ connection: UInt64, direction: Int) -> NetworkEvent? {
        guard var found = connections[connection], !found.inFlight[direction].isEmpty else { return nil }
        found.pumping[direction] = false
        let from = found.ends[direction], to = found.ends[1 - direction]
        guard reachable(from, to, relay: found.relay) else {
            found.pumping[direction] = true
            connections[connection] = found
            schedule(at: clock.nanoseconds + Self.retransmitInterval, .pump(connection: connection, direction: direction))
            return nil
        }
        let head = found.inFlight[direction].removeFirst()
        connections[connection] = found
        startPump(connection, direction: direction)
        guard found.open[1 - direction], !found.dead else {
            tally.droppedByBreak += 1
            forgetIfDone(connection)
            return nil
        }
        if case .frame = head.arrival { tally.delivered += 1 }
        forgetIfDone(connection)
        return .stream(to: to, connection: connection, arrival: head.arrival)
    }

    /// Drops a connection both of whose ends are closed and that carries nothing more.
    private func forgetIfDone(_ connection: UInt64) {
        guard let found = connections[connection], !found.open[0], !found.open[1],
              found.inFlight[0].isEmpty, found.inFlight[1].isEmpty else { return }
        connections[connection] = nil
    }

    /// Open connections (for tests and the summary).
    public var openConnections: Int { connections.values.filter { $0.open[0] || $0.open[1] }.count }
}
