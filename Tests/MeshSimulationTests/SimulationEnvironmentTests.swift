import MeshSimulation
import Testing

@Suite("Simulation environment")
struct SimulationEnvironmentTests {
    @Test("defaults, overrides, a replay seed, and errors that name the variable")
    func parse() throws {
        let plain = try SimulationEnvironment.parse([:])
        #expect(plain.seeds == SimulationEnvironment.defaultSeeds && plain.seedBase == 1 && plain.replaySeed == nil)
        let set = try SimulationEnvironment.parse(["MESH_SIM_SEEDS": "5", "MESH_SIM_SEED_BASE": "100", "MESH_SIM_BUG": "outbox-delete"])
        #expect(set.seedList == [100, 101, 102, 103, 104])
        #expect(set.bug == .outboxDeletedBeforeAck)
        let replay = try SimulationEnvironment.parse(["MESH_SIM_SEED": "77", "MESH_SIM_SEEDS": "9"])
        #expect(replay.seedList == [77])
        #expect(replay.replayCommand(seed: 77).hasPrefix("SWIFT_DETERMINISTIC_HASHING=1 MESH_SIM_SEED=77 "))
        for bad in [["MESH_SIM_SEEDS": "ten"], ["MESH_SIM_SEEDS": "0"], ["MESH_SIM_SEED": "-1"], ["MESH_SIM_BUG": "nope"]] {
            let name = bad.keys.first ?? ""
            #expect { try SimulationEnvironment.parse(bad) } throws: { "\($0)".contains(name) }
        }
    }

    @Test("the trace keeps the last lines, oldest first")
    func trace() {
        var trace = SimulationTrace(capacity: 3)
        for step in 0..<5 { trace.record(step: step, milliseconds: Double(step) * 1.25, "s\(step)") }
        #expect(trace.recent == ["[2 @2.5 ms] s2", "[3 @3.8 ms] s3", "[4 @5.0 ms] s4"])
        #expect(trace.count == 5)
    }
}
