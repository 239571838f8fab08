import Foundation
import Synchronization

/// A deterministic multi-peer network for tests: a seed and a virtual clock decide every
/// latency, drop and duplicate, so a failing run reproduces from its seed.
///
/// Make one transport per peer with ``makeTransport(localPeer:)``. A send puts one copy per
/// recipient in flight (encoded with ``SessionWireCodec``, so the wire format is exercised too),
/// each with its own random latency within ``Conditions``; latency jitter reorders messages.
/// Nothing moves until the test drives the clock: ``deliverNext()`` advances to the next
/// arrival and delivers it, ``advance(by:)`` delivers everything due, ``runUntilIdle(limit:)``
/// delivers everything. A delivery is yielded on the recipient transport's streams *and*
/// returned, so a test can route it synchronously to an engine without any task interleaving.
///
/// Partitions (``partition(_:_:)``) and unreachable peers (``setReachable(_:_:)``) drop
/// messages at send and at delivery time and emit reachability changes on the peers' streams.
public final class ScenarioNetwork: Sendable {
    /// How the network treats messages.
    public struct Conditions: Sendable, Hashable {
        /// Shortest one-way latency.
        public var minimumLatency: Duration
        /// Longest one-way latency; a wider range reorders more.
        public var maximumLatency: Duration
        /// Chance that one copy is lost (0...1).
        public var dropProbability: Double
        /// Chance that one copy is delivered twice, with independent latencies (0...1).
        public var duplicateProbability: Double

        /// Creates conditions.
        public init(minimumLatency: Duration, maximumLatency: Duration, dropProbability: Double = 0, duplicateProbability: Double = 0) {
            self.minimumLatency = minimumLatency
            self.maximumLatency = max(minimumLatency, maximumLatency)
            self.dropProbability = dropProbability
            self.duplicateProbability = duplicateProbability
        }

        /// 1 ms latency, in order, nothing lost or duplicated.
        public static let perfect = Conditions(minimumLatency: .milliseconds(1), maximumLatency: .milliseconds(1))
    }

    /// Counters since creation.
    public struct Statistics: Sendable, Hashable {
        /// Copies put in flight (duplicates included).
        public var sent = 0
        /// Copies delivered.
        public var delivered = 0
        /// Copies lost to the drop probability.
        public var dropped = 0
        /// Copies lost to a partition or an unreachable peer.
        public var partitioned = 0
        /// Extra copies made by the duplicate probability.
        public var duplicated = 0
        /// Copies whose bytes did not decode (always 0 unless the codec is broken).
        public var undecodable = 0
    }

    struct InFlight: Sendable {
        var order: UInt64
        var deliverAt: Int64
        var from: SessionPeer
        var to: String
        var mode: SessionDeliveryMode
        var bytes: [UInt8]
    }

    struct State: Sendable {
        var random: SessionSeededRandom
        var conditions: Conditions
        var nowNanos: Int64 = 0
        var order: UInt64 = 0
        var peers: [String: ScenarioSessionSyncTransport] = [:]
        var peerOrder: [String] = []
        var inFlight: [InFlight] = []
        var partitions: Set<[String]> = []
        var unreachable: Set<String> = []
        var statistics = Statistics()
    }

    /// The instant virtual time 0 corresponds to.
    public let epoch: Date
    /// The seed every random choice derives from.
    public let seed: UInt64
    let state: Mutex<State>

    /// Creates an empty network.
    public init(seed: UInt64, conditions: Conditions = .perfect, epoch: Date = Date(timeIntervalSince1970: 1_700_000_000)) {
        self.seed = seed
        self.epoch = epoch
        state = Mutex(State(random: SessionSeededRandom(seed: seed), conditions: conditions))
    }

    /// Adds a peer and returns its transport. Making a second transport for the same id replaces the first.
    public func makeTransport(localPeer: SessionPeer) -> ScenarioSessionSyncTransport {
        let transport = ScenarioSessionSyncTransport(localPeer: localPeer, network: self)
        state.withLock { s in
            if s.peers.updateValue(transport, forKey: localPeer.id) == nil { s.peerOrder.append(localPeer.id) }
        }
        return transport
    }

    /// The current virtual instant.
    public var now: Date { state.withLock { epoch.addingTimeInterval(Double($0.nowNanos) / 1e9) } }
    /// Counters since creation.
    public var statistics: Statistics { state.withLock { $0.statistics } }
    /// Copies in flight.
    public var inFlightCount: Int { state.withLock { $0.inFlight.count } }
    /// Current conditions; change them with ``setConditions(_:)`` (affects later sends).
    public var conditions: Conditions { state.withLock { $0.conditions } }

    /// Changes the conditions for messages sent from now on.
    public func setConditions(_ conditions: Conditions) { state.withLock { $0.conditions = conditions } }

    /// Cuts the link between two peers (both directions) and tells both they lost each other.
    public func partition(_ a: String, _ b: String) { setLink(a, b, cut: true) }
    /// Restores the link between two peers and tells both they see each other again.
    public func heal(_ a: String, _ b: String) { setLink(a, b, cut: false) }
    /// Restores every cut link and every unreachable peer.
    public func healAll() {
        let (links, peers) = state.withLock { ($0.partitions, $0.unreachable) }
        for link in links { heal(link[0], link[1]) }
        for peer in peers { setReachable(peer, true) }
    }

    /// Whether messages between `a` and `b` are currently lost.
    public func isCut(_ a: String, _ b: String) -> Bool { state.withLock { Self.cut($0, a, b) } }

    /// Makes a peer unreachable from (or reachable again for) every other peer, emitting a
    /// reachability change on each other peer's stream.
    public func setReachable(_ peerID: String, _ reachable: Bool) {
        let (subject, others) = state.withLock { s -> (SessionPeer?, [ScenarioSessionSyncTransport]) in
            if reachable { s.unreachable.remove(peerID) } else { s.unreachable.insert(peerID) }
            return (s.peers[peerID]?.localPeer, s.peerOrder.filter { $0 != peerID }.compactMap { s.peers[$0] })
        }
        guard let subject else { return }
        for transport in others {
            transport.reachabilityHub.yield(SessionPeerReachability(peer: subject, isReachable: reachable, reason: .partition))
        }
    }

    private func setLink(_ a: String, _ b: String, cut: Bool) {
        let key = [a, b].sorted()
        let (pa, pb) = state.withLock { s in
            if cut { s.partitions.insert(key) } else { s.partitions.remove(key) }
            return (s.peers[a], s.peers[b])
        }
        guard let pa, let pb else { return }
        pa.reachabilityHub.yield(SessionPeerReachability(peer: pb.localPeer, isReachable: !cut, reason: .partition))
        pb.reachabilityHub.yield(SessionPeerReachability(peer: pa.localPeer, isReachable: !cut, reason: .partition))
    }

    static func cut(_ s: State, _ a: String, _ b: String) -> Bool {
        s.unreachable.contains(a) || s.unreachable.contains(b) || s.partitions.contains([a, b].sorted())
    }
}
