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
        // The seed alone replays a run: no hash-seed variable in the command.
        #expect(replay.replayCommand(seed: 77) == "MESH_SIM_SEED=77 swift test --filter SimulationCampaign")
        #expect(set.replayCommand(seed: 101) == "MESH_SIM_SEED=101 MESH_SIM_BUG=outbox-delete swift test --filter SimulationCampaign")
        #expect(plain.daemons == nil && !plain.printDigests)
        let fixed = try SimulationEnvironment.parse(["MESH_SIM_DAEMONS": "5", "MESH_SIM_DIGESTS": "1", "MESH_SIM_STEPS": "40"])
        #expect(fixed.daemons == 5 && fixed.printDigests)
        #expect(fixed.replayCommand(seed: 9) == "MESH_SIM_SEED=9 MESH_SIM_STEPS=40 MESH_SIM_DAEMONS=5 swift test --filter SimulationCampaign")
        for bad in [["MESH_SIM_SEEDS": "ten"], ["MESH_SIM_SEEDS": "0"], ["MESH_SIM_SEED": "-1"], ["MESH_SIM_BUG": "nope"],
                    ["MESH_SIM_DAEMONS": "6"], ["MESH_SIM_DAEMONS": "1"], ["MESH_SIM_DIGESTS": "yes"]] {
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

    @Test("the trace digest covers every line, not only the kept ones")
    func traceDigest() {
        func digest(_ texts: [String], capacity: Int) -> String {
            var trace = SimulationTrace(capacity: capacity)
            for (step, text) in texts.enumerated() { trace.record(step: step, milliseconds: 1, text) }
            return trace.digestText
        }
        let lines = ["a", "b", "c", "d"]
        #expect(digest(lines, capacity: 2) == digest(lines, capacity: 100))
        #expect(digest(lines, capacity: 2) != digest(["x", "b", "c", "d"], capacity: 2), "a dropped line still counts")
        #expect(digest(lines, capacity: 2) != digest(["a", "b", "c"], capacity: 2))
        #expect(digest(lines, capacity: 2).count == 16)
        // FNV-1a 64 of "[0 @1.0 ms] a\n".
        var expected: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in "[0 @1.0 ms] a\n".utf8 { expected = (expected ^ UInt64(byte)) &* 0x100_0000_01b3 }
        #expect(digest(["a"], capacity: 1) == String(expected, radix: 16).leftPadded(to: 16))
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}
