import Foundation

/// The hand-out of received items to the attached apps (docs/DELIVERY.md): live events, items
/// stored in the inbox, an attachment's inbox replay after its attach, the resync that follows
/// a replay that left items behind, the items a slow connection shed offered again, and the
/// retry of a hand-out whose delivery could not be recorded.
///
/// Owns `InboxHandOut`, the decisions: what is held for a sink while its replay runs, what is
/// skipped and what is marked as a redelivery. Here are the store reads and writes and the
/// emits. It lives on its router's executor: every method that needs the router's services
/// takes the router as its isolated parameter (no hop, no suspension point of its own).
final class AppHandOut {
    var state: InboxHandOut

    init(options: DeliveryRouterOptions) {
        state = InboxHandOut(maximumDeferredInbox: options.maximumDeferredInbox,
                             maximumDeferredLive: options.maximumDeferredLive, retryMaximum: options.handOutRetryMaximum)
    }

    // MARK: - Live and freshly stored items

    /// Emits a live envelope to `sink`, or holds it while the sink's replay runs.
    func emitLive(_ router: isolated DeliveryRouter, _ event: DeliveryEvent, to sink: any DeliveryEventSink) {
        guard !state.holdLive(event, for: ObjectIdentifier(sink)) else { return }
        sink.emit(event)
        router.consumer.datagramAcks.emitted(to: sink)
    }

    /// Emits entries to each sink that has not had them yet, recording their delivery in the
    /// store first (so an app that dies before acking gets them flagged as redeliveries);
    /// `InboxHandOut.plan` decides who gets what. Sinks detached meanwhile (their connection
    /// is gone) get nothing. When the delivery cannot be recorded nothing is handed: false, and
    /// the sinks wait for a replay (`retryLater`); until then they are handed no inbox
    /// item (order). `replay`: the replay's own page. `recorded`: the transaction that stored
    /// the entries recorded their delivery already.
    @discardableResult
    func hand(_ router: isolated DeliveryRouter, _ entries: [InboxEntry], to sinks: [any DeliveryEventSink],
              replay: Bool = false, recorded alreadyRecorded: Bool = false) async -> Bool {
        guard !entries.isEmpty else { return true }
        let attached = sinks.filter { router.isAttached(ObjectIdentifier($0)) }
        let plan = state.plan(entries, to: attached.map(ObjectIdentifier.init), replay: replay)
        guard !plan.ids.isEmpty else { return true }
        let store = router.store, toRecord = plan.ids
        // TEST ONLY (`testBugHandOutBeforeDurable`): the items reach the app first and the
        // hand-out is recorded a tick later — the historical bug the simulator must catch.
        let recordLater = router.options.testBugHandOutBeforeDurable && !alreadyRecorded
        do {
            if !alreadyRecorded && !recordLater { _ = try await router.worker.run { try store.inbox.markDelivered(ids: toRecord) } }
        } catch {
            router.counters.storeErrors &+= 1
            router.logger.error("could not mark inbox items delivered; offered again later", metadata: ["error": "\(error)"])
            for index in plan.direct {
                // A replay stops at this page; its end schedules the next one.
                let key = ObjectIdentifier(attached[index])
                if replay { state.replayFailed(key) } else { retryLater(router, key) }
            }
            return false
        }
        for index in plan.direct where router.isAttached(ObjectIdentifier(attached[index])) {
            let sink = attached[index]
            state.give(entries, listed: plan.listed, to: ObjectIdentifier(sink), replay: replay) { entry, redelivery in
                sink.emit(entry.envelope(redelivery: redelivery))
                router.counters.inboxDelivered &+= 1
            }
        }
        if recordLater {
            router.loop.scheduleTask(in: .milliseconds(100)) {
                router.onLoop { router in
                    router.spawn { _ = try? await $0.worker.run { try store.inbox.markDelivered(ids: toRecord) } }
                }
            }
        }
        return true
    }

    /// Whether items of `featureID` stored now go straight to its apps: some are attached, and
    /// none is replaying its inbox or waiting to retry a hand-out (those read items later).
    func handsDirectly(_ router: isolated DeliveryRouter, _ featureID: String) -> Bool {
        let sinks = router.sinks(for: featureID)
        return !sinks.isEmpty && sinks.allSatisfy { state.readsLive(ObjectIdentifier($0)) }
    }

    // MARK: - Hand-out retries (`HandOutRetry`)

    /// `key`'s sink was not handed inbox items because their delivery could not be recorded:
    /// hold its inbox hand-outs and schedule a replay.
    func retryLater(_ router: isolated DeliveryRouter, _ key: ObjectIdentifier) {
        if router.isAttached(key) { state.retryLater(key, now: router.now()) }
    }

    /// From the tick: starts the replays that are due.
    func startDueRetries(_ router: isolated DeliveryRouter) {
        for key in state.startDueRetries(now: router.now()) {
            guard let sink = router.attachments.sink(key) else {
                state.dropRetry(key)
                continue
            }
            router.counters.inboxHandOutRetries &+= 1
            router.spawn { await $0.handOut.resync($0, sink) }
        }
    }
}
