import Foundation
import SessionMesh
import Testing

/// For many seeds, engines converge through a lossy, reordering, duplicating, partitioned
/// network, and no event is applied twice. `MESH_PROPERTY_SEEDS` (default 100) seeds starting at
/// `MESH_PROPERTY_SEED_BASE` (default 1). A failure prints its seed and how to rerun it alone.
@Suite("Convergence properties")
struct ConvergencePropertyTests {
    /// `count` seeds from `base`, wrapping past UInt64.max (so any base, even 2^64−1, runs).
    static var seeds: [UInt64] {
        let base = environmentInteger("MESH_PROPERTY_SEED_BASE", default: 1)
        let count = max(1, environmentInteger("MESH_PROPERTY_SEEDS", default: 100))
        return (0..<count).map { base &+ $0 }
    }

    static func lossyConditions(_ r: inout SessionSeededRandom) -> ScenarioNetwork.Conditions {
        ScenarioNetwork.Conditions(
            minimumLatency: .milliseconds(1),
            maximumLatency: .milliseconds(Int64.random(in: 1...80, using: &r)),
            dropProbability: Double.random(in: 0...0.25, using: &r),
            duplicateProbability: Double.random(in: 0...0.25, using: &r))
    }

    static func report(_ name: String, _ seed: UInt64, _ error: any Error) {
        let line = "\(name) FAILED for seed \(seed): \(error) — rerun with MESH_PROPERTY_SEED_BASE=\(seed) MESH_PROPERTY_SEEDS=1 swift test --filter Convergence"
        print(line)
        Issue.record(Comment(rawValue: line))
    }

    static func randomEvent(_ r: inout SessionSeededRandom) -> TallyEvent {
        Bool.random(using: &r) ? .add(Int.random(in: 1...9, using: &r)) : .set(key: "k\(Int.random(in: 0...2, using: &r))", value: Int.random(in: 0...99, using: &r))
    }

    @Test func severalWritersConverge() async {
        var totals = MeshScenario.Figures()
        var failures = 0
        for seed in Self.seeds {
            do {
                totals.add(try await Self.multiWriter(seed: seed))
            } catch {
                Self.report("severalWritersConverge", seed, error)
                failures += 1
                if failures >= 5 { break }
            }
        }
        print("convergence (several writers): seeds \(Self.seeds.first ?? 0)+\(Self.seeds.count) \(totals)")
    }

    static func multiWriter(seed: UInt64) async throws -> MeshScenario.Figures {
        var r = SessionSeededRandom(seed: seed)
        var mesh = MeshScenario(seed: seed, conditions: lossyConditions(&r))
        let n = Int.random(in: 2...4, using: &r)
        for p in 0..<n { mesh.join("p\(p)") }
        let ids = (0..<n).map { "p\($0)" }
        for _ in 0..<Int.random(in: 10...60, using: &r) {
            let roll = Int.random(in: 0..<100, using: &r)
            switch roll {
            case 0..<50: try await mesh.submit(randomEvent(&r), on: Int.random(in: 0..<n, using: &r))
            case 50..<75: try await mesh.run(for: .milliseconds(Int64.random(in: 0...50, using: &r)))
            case 75..<85: mesh.network.partition(ids.randomElement(using: &r)!, ids.randomElement(using: &r)!)
            case 85..<95: mesh.network.heal(ids.randomElement(using: &r)!, ids.randomElement(using: &r)!)
            default: mesh.network.setReachable(ids.randomElement(using: &r)!, Bool.random(using: &r))
            }
        }
        // The network heals: no partitions, no more loss (duplication and reordering remain).
        mesh.network.healAll()
        var healed = mesh.network.conditions
        healed.dropProbability = 0
        mesh.network.setConditions(healed)
        try await mesh.drain()
        // Anti-entropy as the daemon does on channel activation: every peer republishes its
        // latest snapshot, until all agree (bounded rounds).
        var rounds = 0
        while !mesh.converged && rounds < 2 * n + 2 {
            rounds += 1
            for p in 0..<n { try await mesh.publishSnapshot(from: p) }
            try await mesh.drain()
        }
        mesh.figures.antiEntropyRounds = rounds
        guard mesh.converged else {
            try mesh.verify()  // names a double-applied or missing event when that is the cause
            throw MeshScenario.Failure(description: "no convergence after \(rounds) snapshot rounds: \(mesh.engines.map { "\($0.localPeer.id) \($0.reflectedSequences)" })")
        }
        try mesh.verify()
        mesh.collectNetworkFigures()
        return mesh.figures
    }

    @Test func followersJoiningLateConvergeOnTheOwner() async {
        var totals = MeshScenario.Figures()
        var failures = 0
        for seed in Self.seeds {
            do {
                totals.add(try await Self.ownerFollowers(seed: seed))
            } catch {
                Self.report("followersJoiningLateConvergeOnTheOwner", seed, error)
                failures += 1
                if failures >= 5 { break }
            }
        }
        print("convergence (owner/followers): seeds \(Self.seeds.first ?? 0)+\(Self.seeds.count) \(totals)")
    }

    static func ownerFollowers(seed: UInt64) async throws -> MeshScenario.Figures {
        var r = SessionSeededRandom(seed: seed ^ 0xF011_0E5)
        var mesh = MeshScenario(seed: seed, conditions: lossyConditions(&r))
        mesh.join("owner")
        var followers: [String] = []
        let wanted = Int.random(in: 1...3, using: &r)
        for _ in 0..<Int.random(in: 10...60, using: &r) {
            let roll = Int.random(in: 0..<100, using: &r)
            switch roll {
            case 0..<45: try await mesh.submit(randomEvent(&r), on: 0)
            case 45..<70: try await mesh.run(for: .milliseconds(Int64.random(in: 0...50, using: &r)))
            case 70..<80 where followers.count < wanted:
                // A follower joins mid-session: it asks the owner for the state so far.
                let id = "f\(followers.count + 1)"
                followers.append(id)
                let i = mesh.join(id)
                try await mesh.transports[i].requestSnapshot(sessionID: Fixture.session, from: Fixture.peer("owner"))
            case 80..<88: try await mesh.publishSnapshot(from: 0)
            case 88..<94: if let f = followers.randomElement(using: &r) { mesh.network.partition("owner", f) }
            default: if let f = followers.randomElement(using: &r) { mesh.network.heal("owner", f) }
            }
        }
        if followers.isEmpty {
            followers.append("f1")
            let i = mesh.join("f1")
            try await mesh.transports[i].requestSnapshot(sessionID: Fixture.session, from: Fixture.peer("owner"))
        }
        mesh.network.healAll()
        var healed = mesh.network.conditions
        healed.dropProbability = 0
        mesh.network.setConditions(healed)
        try await mesh.drain()
        // Closing: the owner publishes its final snapshot once.
        try await mesh.publishSnapshot(from: 0)
        try await mesh.drain()
        for engine in mesh.engines.dropFirst() where engine.localSequence != 0 {
            throw MeshScenario.Failure(description: "follower \(engine.localPeer.id) issued events")
        }
        guard mesh.converged else {
            try mesh.verify()
            throw MeshScenario.Failure(description: "followers differ from the owner: \(mesh.engines.map { "\($0.localPeer.id) \($0.reflectedSequences)" })")
        }
        try mesh.verify()
        mesh.collectNetworkFigures()
        return mesh.figures
    }
}
