import Foundation

/// One step of a run: an app operation, a fault, or nothing (time passes either way).
extension Simulation {
    func performStep() throws {
        for (index, step) in restartAt.sorted(by: { $0.key < $1.key }) where step <= context.step {
            restartAt[index] = nil
            try boot(index)
        }
        switch random.weighted([70, 14, 16]) {
        case 0: appStep()
        case 1: try faultStep()
        default: break
        }
        membershipStep()
        runLoops()
        trackRemovalKnowledge()
    }

    private func appStep() {
        guard let app = random.pick(apps) else { return }
        let host = daemons[app.daemon]
        guard host.alive, !app.busy else { return }
        if app.attachment == nil, random.chance(0.8) {
            app.attach(on: host)
            return
        }
        let peer = random.pick(daemons.indices.filter { $0 != app.daemon })
        let feature = app.feature
        switch random.weighted([24, 14, 14, 7, 7, 3, 3, 2, 4, 3, 4, 2]) {
        case 0:
            if app.unsent.isEmpty { _ = app.submit(random.int(1...9)) }
            app.sendNextReliable(on: host)
        case 1: app.sendRealtime(to: random.chance(0.5) ? nil : peer, on: host)
        case 2: app.acknowledge(count: random.int(1...8), on: host)
        case 3: app.publishSnapshot(on: host)
        case 4: if let peer { app.readSnapshot(from: peer, healed: false, on: host) }
        case 5: if let peer { app.requestSnapshot(from: peer, on: host) }
        case 6: if let session = random.pick(sessions[feature] ?? []) { app.announce(session, on: host) }
        case 7: if let session = random.pick(sessions[feature] ?? []) { app.close(session, on: host) }
        case 8:
            let revision = (anchorRevision[feature] ?? 0) + 1
            anchorRevision[feature] = revision
            app.setAnchor(revision: revision, on: host)
        case 9: app.readSessions(on: host)
        case 10: app.detach(on: host)
        default: if let session = random.pick(sessions[feature] ?? []) { app.publishOnClosed(session, on: host) }
        }
    }

    private func faultStep() throws {
        let count = daemons.count
        let a = faultRandom.int(0...(count - 1))
        var b = faultRandom.int(0...(count - 2))
        if b >= a { b += 1 }
        switch faultRandom.weighted([5, 3, 5, 4, 3, 4]) {
        case 0:
            // At most all but one down at once.
            guard daemons[a].alive, daemons.filter(\.alive).count > 1 else { return }
            try crash(a)
            restartAt[a] = context.step + faultRandom.int(1...12)
        case 1:
            guard !daemons[a].alive else { return }
            restartAt[a] = nil
            try boot(a)
        case 2:
            network.setPartitioned(a, b, true)
            context.note("link d\(a)–d\(b) cut")
        case 3:
            network.setPartitioned(a, b, false)
            context.note("link d\(a)–d\(b) restored")
        case 4:
            network.changeAddress(a)
            context.note("d\(a) changes address")
        default:
            let quality = faultRandom.chance(0.3) ? LinkQuality.clean : LinkQuality.random(using: &faultRandom)
            network.setQuality(a, b, quality)
            context.note("link d\(a)–d\(b): \(quality)")
        }
        context.faults += 1
    }

    /// `kill -9` of daemon `index`: its loop stops, its store keeps what it committed, its apps
    /// lose their attachment and whatever they had under way.
    func crash(_ index: Int) throws {
        context.note("d\(index) crashes")
        context.ledger.recordCrash(index, at: context.clock.nanoseconds)
        network.crash(index)
        try daemons[index].crash()
        for app in apps where app.daemon == index { app.daemonCrashed() }
    }
}

/// Memory bounds: what a router holds per peer, read from its counters and its channels.
extension Simulation {
    /// Reads every live router's counters (in a task on its loop) and checks the bounds: the
    /// pre-activation buffer holds at most `pendingCapacity` items per peer, the inbox pipeline
    /// at most `inboxBacklogBytes` plus one message, and the inbound messages the router queued
    /// stay within the same bound.
    func checkMemory() {
        let options = routerOptions
        let peers = daemons.count - 1
        for daemon in daemons where daemon.alive {
            let index = daemon.index, context = self.context
            let queuedPeak = daemon.node?.inboundQueuedBytesPeakOnLoop() ?? 0
            let byteBound = options.inboxBacklogBytes + 64 * 1024
            if queuedPeak > byteBound {
                context.fail([SimulationViolation(.memoryBound, "d\(index)'s router held \(queuedPeak) bytes of inbound messages (bound \(byteBound))")])
            }
            daemon.spawn { router in
                let counters = await router.counterValues()
                let pending = counters["pending.queued"] ?? 0
                if pending > UInt64(options.pendingCapacity * peers) {
                    context.fail([SimulationViolation(.memoryBound,
                        "d\(index) buffers \(pending) items before activation (bound \(options.pendingCapacity) per peer)")])
                }
                let backlog = counters["delivery.inbox.backlog_peak_bytes"] ?? 0
                if backlog > UInt64(byteBound) {
                    context.fail([SimulationViolation(.memoryBound, "d\(index)'s inbox pipeline held \(backlog) bytes (bound \(byteBound))")])
                }
            }
        }
        runLoops()
    }
}
