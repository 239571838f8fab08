import MeshSimulation
import Testing

@Suite("Simulation random")
struct SimulationRandomTests {
    @Test("the same seed gives the same numbers, another seed others")
    func reproducible() {
        var a = SimulationRandom(seed: 42), b = SimulationRandom(seed: 42), c = SimulationRandom(seed: 43)
        let first = (0..<16).map { _ in a.next() }
        #expect(first == (0..<16).map { _ in b.next() })
        #expect(first != (0..<16).map { _ in c.next() })
    }

    @Test("a fork depends on its label and seed, not on what the parent drew since")
    func forks() {
        var parent = SimulationRandom(seed: 7)
        var before = parent.fork("network")
        _ = (0..<100).map { _ in parent.next() }
        var after = parent.fork("network")
        var other = SimulationRandom(seed: 7).fork("faults")
        let x = (0..<8).map { _ in before.next() }
        #expect(x == (0..<8).map { _ in after.next() })
        #expect(x != (0..<8).map { _ in other.next() })
    }

    @Test("bounded draws stay in range and cover it")
    func ranges() {
        var random = SimulationRandom(seed: 1)
        var seen = Set<Int>()
        for _ in 0..<2_000 {
            let value = random.int(3...7)
            #expect((3...7).contains(value))
            seen.insert(value)
        }
        #expect(seen == Set(3...7))
        #expect(!(0..<100).contains { _ in random.chance(0) })
        #expect((0..<100).allSatisfy { _ in random.chance(1) })
        var hits = [0, 0, 0]
        for _ in 0..<3_000 { hits[random.weighted([1, 0, 2]) ?? 1] += 1 }
        #expect(hits[1] == 0)
        #expect(hits[2] > hits[0])
        #expect(random.weighted([0, 0]) == nil)
        #expect(random.pick([Int]()) == nil)
    }
}
