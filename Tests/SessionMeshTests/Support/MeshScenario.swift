import Foundation
import SessionMesh

/// Drives several TallyEngines over a ScenarioNetwork the way an adapter would: every delivery
/// is routed synchronously to the receiving engine, a gap triggers a snapshot request to the
/// sender, a request is answered with a snapshot. Everything is decided by the seed.
struct MeshScenario {
    struct Failure: Error, CustomStringConvertible { var description: String }

    struct Figures {
        var events = 0, deliveries = 0, snapshotRequests = 0, snapshotsAdopted = 0, snapshotsStale = 0
        var antiEntropyRounds = 0, dropped = 0, duplicated = 0, partitioned = 0, retransmitted = 0

        mutating func add(_ o: Figures) {
            events += o.events; deliveries += o.deliveries; snapshotRequests += o.snapshotRequests
            snapshotsAdopted += o.snapshotsAdopted; snapshotsStale += o.snapshotsStale
            antiEntropyRounds += o.antiEntropyRounds; dropped += o.dropped; duplicated += o.duplicated
            partitioned += o.partitioned; retransmitted += o.retransmitted
        }
    }

    let seed: UInt64
    let network: ScenarioNetwork
    var engines: [TallyEngine] = []
    var transports: [ScenarioSessionSyncTransport] = []
    var index: [String: Int] = [:]
    var submitted: [(tag: String, event: TallyEvent, at: Date, peer: String)] = []
    var figures = Figures()

    init(seed: UInt64, conditions: ScenarioNetwork.Conditions) {
        self.seed = seed
        network = ScenarioNetwork(seed: seed, conditions: conditions)
    }

    @discardableResult
    mutating func join(_ id: String) -> Int {
        let i = engines.count
        engines.append(Fixture.engine(id, seed: seed))
        transports.append(network.makeTransport(localPeer: Fixture.peer(id)))
        index[id] = i
        return i
    }

    mutating func submit(_ event: TallyEvent, on i: Int) async throws {
        let now = network.now
        let envelope = try engines[i].submitLocal(event, at: now)
        let m = envelope.metadata
        submitted.append(("\(m.sourcePeerID)#\(m.sequence)", event, now, m.sourcePeerID))
        figures.events += 1
        try await transports[i].send(AnySessionSyncEnvelope(envelope), mode: .realtimeBestEffort, to: nil)
    }

    mutating func publishSnapshot(from i: Int) async throws {
        let snapshot = engines[i].makeSnapshot(at: network.now)
        try await transports[i].sendSnapshot(AnySessionSyncSnapshot(snapshot), mode: .latestSnapshot, to: nil)
    }

    /// Delivers and handles everything arriving up to `duration` from now.
    mutating func run(for duration: Duration) async throws {
        let deadline = network.now.addingTimeInterval(Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18)
        var budget = 100_000
        while budget > 0, let next = network.nextArrival, next <= deadline, let d = network.deliverNext() {
            try await handle(d)
            budget -= 1
        }
        let remaining = deadline.timeIntervalSince(network.now)
        if remaining > 0 { network.advance(by: .nanoseconds(Int64(remaining * 1e9))) }
    }

    /// Delivers and handles everything in flight (bounded).
    mutating func drain() async throws {
        var budget = 100_000
        while budget > 0, let d = network.deliverNext() {
            try await handle(d)
            budget -= 1
        }
        if budget == 0 { throw Failure(description: "network did not drain within 100 000 deliveries") }
    }

    mutating func handle(_ d: ScenarioDelivery) async throws {
        guard let i = index[d.to.id] else { return }
        figures.deliveries += 1
        switch d.message {
        case let .envelope(erased):
            let result = try engines[i].receive(erased.typed(as: TallyEvent.self))
            if case .snapshotRequired = result {
                figures.snapshotRequests += 1
                try await transports[i].requestSnapshot(sessionID: Fixture.session, from: d.from)
            }
        case let .snapshotRequest(request):
            let snapshot = engines[i].makeSnapshot(at: network.now)
            try await transports[i].sendSnapshot(AnySessionSyncSnapshot(snapshot), mode: .reliableEventually, to: Fixture.peer(request.requestingPeerID))
        case let .snapshot(erased):
            switch try engines[i].applySnapshot(erased.typed(as: TallyState.self)) {
            case .applied: figures.snapshotsAdopted += 1
            case .staleIgnored: figures.snapshotsStale += 1
            }
            // Send the snapshot's maker what it lacks and this peer holds as events.
            for envelope in engines[i].eventsMissing(from: erased.reflectedSequences, forPeer: d.from.id) {
                figures.retransmitted += 1
                try await transports[i].send(AnySessionSyncEnvelope(envelope), mode: .reliableEventually, to: d.from)
            }
        }
    }

    var converged: Bool {
        engines.allSatisfy { $0.state == engines[0].state && $0.reflectedSequences == engines[0].reflectedSequences }
    }

    /// Checks every engine against what was submitted: same state, each event applied exactly once.
    func verify(engines subset: [TallyEngine]? = nil) throws {
        let all = subset ?? engines
        let expectedTotal = submitted.reduce(0) { if case let .add(n) = $1.event { $0 + n } else { $0 } }
        var expectedRegisters: [String: TallyState.Stamped] = [:]
        for s in submitted {
            guard case let .set(key, value) = s.event else { continue }
            let c = TallyState.Stamped(value: value, at: s.at, peer: s.peer)
            if let cur = expectedRegisters[key], (cur.at, cur.peer) >= (c.at, c.peer) { continue }
            expectedRegisters[key] = c
        }
        let tags = Set(submitted.map(\.tag))
        for engine in all {
            let id = engine.localPeer.id
            if let twice = engine.state.applied.first(where: { $0.value != 1 }) {
                throw Failure(description: "\(id) applied \(twice.key) \(twice.value) times")
            }
            if Set(engine.state.applied.keys) != tags {
                let missing = tags.subtracting(engine.state.applied.keys).sorted().prefix(5)
                throw Failure(description: "\(id) has \(engine.state.applied.count) of \(tags.count) events; missing e.g. \(Array(missing))")
            }
            if engine.state.total != expectedTotal || engine.state.registers != expectedRegisters {
                throw Failure(description: "\(id) total \(engine.state.total) (expected \(expectedTotal)) or registers differ")
            }
            if engine.state != all[0].state { throw Failure(description: "\(id) state differs from \(all[0].localPeer.id)") }
        }
    }

    mutating func collectNetworkFigures() {
        let s = network.statistics
        figures.dropped = s.dropped
        figures.duplicated = s.duplicated
        figures.partitioned = s.partitioned
    }
}
