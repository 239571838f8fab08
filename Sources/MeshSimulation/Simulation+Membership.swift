import Foundation
import MeshCore

/// A membership change in a run: with the device set on, one run in four with three daemons
/// or more has a member remove another (alive or down) at a random step, through the real
/// `MeshNode.unpair`. From then on the removed daemon is out of the delivery checks that need
/// a channel to it (the members drop what it queued and what was queued for it); it must get
/// nothing sent after every other member has heard of its removal (`removed-device-got-item`),
/// and after healing the members must hold one roster without it (`rosters-diverged`). Its
/// choices come from a stream of their own, so seeds without a change run as before.
extension Simulation {
    /// Whether this run has a membership change, and at which step; drawn once per run.
    static func membershipPlan(_ random: inout SimulationRandom, daemons: Int, steps: Int, deviceSet: Bool) -> Int? {
        guard deviceSet, daemons >= 3, steps > 1, random.chance(0.25) else { return nil }
        return random.int(1...(steps - 1))
    }

    /// At the planned step: a live member removes another daemon from the set.
    func membershipStep() {
        guard let step = membershipStepAt, context.step >= step, context.removedDaemon == nil else { return }
        membershipStepAt = nil
        guard let remover = membershipRandom.pick(daemons.indices.filter { daemons[$0].alive }),
              let removed = membershipRandom.pick(daemons.indices.filter { $0 != remover }),
              let node = daemons[remover].node else { return }
        context.removedDaemon = removed
        context.note("d\(remover) removes d\(removed) from the device set")
        let key = context.deviceKeys[removed], context = self.context
        daemons[remover].spawn { _ in
            do {
                try await node.unpair(deviceID: key)
            } catch {
                context.fail([SimulationViolation(.rostersDiverged, "d\(remover) could not remove d\(removed): \(error)")])
            }
        }
    }

    /// Notes the instant from which every other member, alive and running, has forgotten the
    /// removed daemon (a member that is down has not heard yet).
    func trackRemovalKnowledge() {
        guard let removed = context.removedDaemon, context.removalKnownAt == nil else { return }
        let removedID = daemons[removed].deviceID
        for daemon in daemons where daemon.index != removed {
            guard daemon.alive, let node = daemon.node, !node.isPairedOnLoop(removedID) else { return }
        }
        context.removalKnownAt = context.clock.nanoseconds
        context.note("every member has forgotten d\(removed)")
    }

    /// After healing: the members hold the same roster, in which they are members, and none
    /// has the removed daemon as a peer.
    func checkRosters() {
        guard let removed = context.removedDaemon else { return }
        let removedID = daemons[removed].deviceID
        var digests: [String: [Int]] = [:]
        for daemon in daemons where daemon.index != removed {
            guard let node = daemon.node, let status = node.deviceSetStatusOnLoop() else { continue }
            if node.isPairedOnLoop(removedID) {
                context.fail([SimulationViolation(.rostersDiverged, "d\(daemon.index) still has the removed d\(removed) as a peer after healing")])
            }
            if status.removed {
                context.fail([SimulationViolation(.rostersDiverged, "d\(daemon.index) says it was removed; only d\(removed) was")])
            }
            digests[status.digest, default: []].append(daemon.index)
        }
        if digests.count > 1 {
            let groups = digests.values.map { "[" + $0.map { "d\($0)" }.joined(separator: " ") + "]" }.sorted()
            context.fail([SimulationViolation(.rostersDiverged, "after healing the members hold \(digests.count) different rosters: \(groups.joined(separator: ", "))")])
        }
    }
}
