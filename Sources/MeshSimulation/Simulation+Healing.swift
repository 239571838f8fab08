import Foundation

/// The end of a run: everything restarts, the network heals, every app attaches and sends what
/// its daemon has not confirmed; once all settled, the end-state invariants are checked.
extension Simulation {
    func heal() throws {
        context.step += 1
        context.note("healing: every daemon up, every link restored and clean")
        restartAt.removeAll()
        for daemon in daemons where !daemon.alive { try boot(daemon.index) }
        network.healAll()
        healBroker()
        let healedAt = context.clock.nanoseconds
        let deadline = healedAt + configuration.healingTime
        var restored = false
        var quietRounds = 0
        for _ in 0..<100_000 where context.clock.nanoseconds < deadline && !context.failed {
            var pending = false
            if !restored { restored = channelsRestored(since: healedAt) }
            trackRemovalKnowledge()
            guard !context.failed else { return }
            pending = !restored
            // A removed daemon's apps have nobody left to send to.
            let removed = context.removedDaemon
            for app in apps where !app.busy {
                let host = daemons[app.daemon]
                if app.attachment == nil { app.attach(on: host); pending = true }
                else if !app.unsent.isEmpty, app.daemon != removed { app.sendNextReliable(on: host); pending = true }
            }
            pending = pending || apps.contains { $0.daemon != removed && ($0.busy || !$0.unsent.isEmpty) } || !everythingDelivered()
            advance(by: 100_000_000)
            quietRounds = pending ? 0 : quietRounds + 1
            if quietRounds >= 3 { break }
        }
        guard !context.failed else { return }
        context.fail(context.checker.checkNothingLost(context.ledger, excluding: context.removedDaemon))
        guard !context.failed else { return }
        try reattachEveryApp()
        guard !context.failed else { return }
        readEverySnapshot()
        // With a removal, what the members dropped of the removed daemon's values (and it of
        // theirs) makes the sums differ by design: the engines are not compared.
        if context.removedDaemon == nil { checkEngines() }
        checkRosters()
        checkMemory()
    }

    /// Whether every two daemons have their channel back; a violation once
    /// `channelRecoveryBound` passed since `healedAt` without.
    func channelsRestored(since healedAt: UInt64) -> Bool {
        let missing = missingChannels()
        let elapsed = context.clock.nanoseconds - healedAt
        guard missing.isEmpty else {
            if elapsed > Self.channelRecoveryBound {
                let pairs = missing.map { "d\($0.0)–d\($0.1)" }.joined(separator: ", ")
                context.fail([SimulationViolation(.channelNotRestored,
                    "\(pairs) had no channel both ends hold \(elapsed / 1_000_000) ms after the network healed (bound \(Self.channelRecoveryBound / 1_000_000) ms)")])
            }
            return false
        }
        context.note("every channel is back \(elapsed / 1_000_000) ms after the network healed")
        return true
    }

    /// Whether every confirmed reliable item reached every target's app.
    func everythingDelivered() -> Bool {
        let removed = context.removedDaemon
        return context.ledger.sent.allSatisfy { item in
            item.mode != 2 || !item.confirmed || item.sender == removed
                || item.targets.allSatisfy { $0 == removed || !(context.ledger.deliveries[$0][item.eventID] ?? []).isEmpty }
        }
    }

    /// Every app detaches and attaches again: whatever it was handed and did not acknowledge must
    /// come again, marked as a redelivery.
    private func reattachEveryApp() throws {
        context.note("every app detaches and attaches again")
        for app in apps { app.detach(on: daemons[app.daemon]) }
        advance(by: 10_000_000)
        let unacked = apps.map { $0.unacknowledged.count }
        for app in apps { app.attach(on: daemons[app.daemon]) }
        advance(by: 500_000_000)
        // Attachment generations grow across the whole run, so the final attaches have the highest.
        var finalGeneration = Array(repeating: Int.max, count: daemons.count)
        for app in apps { finalGeneration[app.daemon] = min(finalGeneration[app.daemon], app.generation) }
        context.fail(context.checker.checkUnacknowledgedReturned(context.ledger, finalAttachment: finalGeneration,
                                                                 excluding: context.removedDaemon))
        context.note("reattach: \(unacked.reduce(0, +)) unacknowledged items were expected again")
    }

    /// Every app reads every peer's snapshot: the highest revision published must be there.
    private func readEverySnapshot() {
        for app in apps {
            for publisher in daemons.indices where publisher != app.daemon {
                app.readSnapshot(from: publisher, healed: true, on: daemons[app.daemon])
                advance(by: 1_000_000)
            }
        }
    }

    /// The engines of one feature all hold the sum of every value any app of that feature submitted.
    private func checkEngines() {
        for feature in configuration.features {
            let group = apps.filter { $0.feature == feature }
            let expected = group.reduce(0) { $0 &+ $1.submittedTotal }
            for app in group where app.engine.state != expected {
                context.fail([SimulationViolation(.enginesDiverged,
                    "\(app.name)'s engine holds \(app.engine.state); the apps submitted \(expected) in all")])
            }
        }
    }
}
