import Foundation
import MeshSimulation
import Testing

@Suite("Simulation campaign", .serialized)
struct SimulationCampaignTests {
    /// `MESH_SIM_SEEDS` seeds from `MESH_SIM_SEED_BASE` (or the one `MESH_SIM_SEED`): every
    /// invariant holds for each. A failure prints the seed's last steps and its replay command.
    @Test("SimulationCampaign: every seed keeps every invariant")
    func campaign() throws {
        let environment = try SimulationEnvironment.parse()
        let campaign = SimulationCampaign(environment: environment)
        let summary = campaign.run()
        print(summary)
        if let failure = summary.failure {
            Issue.record("\(campaign.report(failure))")
        }
        #expect(summary.seedsRun == environment.seedList.count)
    }

    /// Seeds that once failed, each for a fault of the node or the checker fixed since
    /// (docs/SIMULATION.md, "What it found").
    @Test("SimulationRegression: seeds that once failed pass", arguments: [2404, 8930] as [UInt64])
    func regression(seed: UInt64) throws {
        let folder = SimulationCampaign(environment: try SimulationEnvironment.parse([:])).folder + "-regression"
        defer { try? FileManager.default.removeItem(atPath: folder) }
        // As they ran when they failed: the device set did not exist yet.
        let result = SimulationCampaign.runOne(seed: seed, steps: SimulationEnvironment.defaultSteps, bug: .none, folder: folder,
                                               deviceSet: false)
        #expect(result.passed, "seed \(seed): \(result.violations.map(\.description).joined(separator: "; "))")
    }

    @Test("SimulationReplay: a seed replays to the same trace and figures")
    func replay() throws {
        let folder = SimulationCampaign(environment: try SimulationEnvironment.parse([:])).folder + "-replay"
        defer { try? FileManager.default.removeItem(atPath: folder) }
        for seed: UInt64 in [3, 1_000_003] {
            let first = SimulationCampaign.runOne(seed: seed, steps: 60, bug: .none, folder: folder, wholeTrace: true)
            let second = SimulationCampaign.runOne(seed: seed, steps: 60, bug: .none, folder: folder, wholeTrace: true)
            // Every job of a simulated daemon ran on its loop, on the simulation's thread: nothing
            // of the run depended on real timing (MESH_SIM_DEBUG_FOREIGN=1 says where one came from).
            #expect(first.foreignJobs == 0 && second.foreignJobs == 0, "seed \(seed): \(first.foreignJobs) + \(second.foreignJobs) foreign jobs")
            #expect(first.traceLines == second.traceLines)
            #expect(first.traceDigest == second.traceDigest, "seed \(seed): the two runs' traces differ")
            #expect(first.wireDigest == second.wireDigest, "seed \(seed): the two runs sent different bytes or in another order")
            if let index = first.trace.indices.first(where: { $0 >= second.trace.count || first.trace[$0] != second.trace[$0] }) {
                Issue.record("seed \(seed): first difference at line \(index):\n  \(first.trace[index])\n  \(second.trace[index])")
            }
            #expect(first.itemsSent == second.itemsSent && first.itemsDelivered == second.itemsDelivered)
            #expect(first.network == second.network)
            #expect(first.virtualMilliseconds == second.virtualMilliseconds)
            #expect(first.itemsSent > 0)
            #expect(first.traceLines == first.trace.count, "a whole-trace run keeps every line")
        }
    }
}

@Suite("Simulation bugs", .serialized)
struct SimulationBugTests {
    /// With each historical bug switched back on in the real router, seeds from
    /// `MESH_SIM_SEED_BASE` run until one fails; it must fail within 200 seeds, and for the
    /// invariant that bug breaks.
    @Test("SimulationBugs: each re-introduced bug is caught", arguments: [
        (SimulationBug.inboxHandOutNotDurable, [SimulationViolation.Invariant.handOutNotDurable, .unmarkedDuplicate, .unacknowledgedLost]),
        (SimulationBug.outboxDeletedBeforeAck, [SimulationViolation.Invariant.reliableLost, .enginesDiverged, .reliableOrder]),
        (SimulationBug.dialNotRetried, [SimulationViolation.Invariant.channelNotRestored]),
    ])
    func caught(bug: SimulationBug, expected: [SimulationViolation.Invariant]) throws {
        let environment = try SimulationEnvironment.parse()
        let campaign = SimulationCampaign(environment: environment)
        let caught = campaign.seedsToCatch(bug, from: environment.seedBase, limit: 200)
        guard let caught else {
            Issue.record("bug \(bug.rawValue) was not caught in 200 seeds from \(environment.seedBase)")
            return
        }
        let found = caught.result.violations.map(\.invariant)
        print("simulation: bug \(bug.rawValue) caught after \(caught.seeds) seeds from base \(environment.seedBase) "
              + "(seed \(caught.result.seed): \(found.map(\.rawValue).joined(separator: ", ")))")
        #expect(found.contains { expected.contains($0) }, "\(campaign.report(caught.result))")
    }
}
