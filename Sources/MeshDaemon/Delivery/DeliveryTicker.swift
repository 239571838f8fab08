import NIOCore

/// The router's periodic work: the tick loop every `TickSchedule.interval` (a task scheduled on
/// the router's loop, so virtual time in the simulator), and what one tick does — per active
/// peer the link estimate, presence renewal, lease expiry and reliable retries; then the
/// hand-out retries, the held warnings, the seen-set flush and the idle memory release.
///
/// Owns the tick's rounds (`TickSchedule`), the loop's wait and its timer, and the idle-memory
/// detector (`IdleMemoryRelease`). Its methods take the router `isolated`: they run on the
/// router's executor, with no hop.
final class DeliveryTicker {
    /// The tick's rounds (which ones renew presence).
    var ticks: TickSchedule
    /// The tick loop waiting for its timer, and that timer.
    var waiter: CheckedContinuation<Void, Never>?
    var timer: Scheduled<Void>?
    /// Gives the store's page cache and free heap back once the traffic pauses (2 s).
    var idleMemory = IdleMemoryRelease(quietTicks: 20)

    init(presenceLease: Double) {
        self.ticks = TickSchedule(presenceLease: presenceLease)
    }

    /// The tick loop, until the router stops (`stop`).
    func run(_ router: isolated DeliveryRouter) async {
        while !router.consumer.inbound.stopping {
            await withCheckedContinuation { continuation in
                waiter = continuation
                timer = router.loop.scheduleTask(in: TickSchedule.interval) { [router] in router.onLoop { $0.ticker.timerFired() } }
            }
            guard !router.consumer.inbound.stopping else { return }
            await tick(router, round: ticks.next())
        }
    }

    func timerFired() {
        timer = nil
        waiter?.resume()
        waiter = nil
    }

    /// The router stops: the tick loop ends now instead of after its wait.
    func stop() {
        timer?.cancel()
        timerFired()
    }

    /// One tick: per active peer estimates, presence renewal, lease expiry, reliable retries;
    /// then hand-out retries, held warnings, the seen-set flush, idle memory release.
    func tick(_ router: isolated DeliveryRouter, round: UInt64) async {
        for peer in router.peerStates.keys.sorted() where router.peerStates[peer]?.active == true {
            router.refreshEstimate(peer)
            if ticks.renewsPresence(round) {
                router.transmit(.presence(features: router.attachments.announcedFeatures), to: peer, path: .datagram)
            }
            router.emitReachability(router.peerStates[peer]?.expireLease(now: router.now()) ?? [], of: peer)
            if router.peerStates[peer]?.outbox.roomResendPending == true { router.sender.reliableRoom(router, from: peer) }
            router.sender.retryIfStalled(router, peer)
        }
        router.courier.tick(router)
        router.handOut.startDueRetries(router)
        router.summariseHeldWarnings()
        if round % DeliveryRouter.inboxExpiryRounds == 0 { await router.expireUnattachedInbox() }
        if round % SessionDirectory.handOverRounds == 0 { await router.directory.handOverPass(router) }
        await router.consumer.flushSeen(router)
        if idleMemory.tick(fingerprint: router.counters.traffic) {
            let store = router.store
            _ = try? await router.worker.run { store.releaseMemory() }
        }
    }
}
