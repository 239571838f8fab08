import Foundation

/// Inbox replays: what an attachment gets from the inbox after its attach, and the items its
/// connection shed, offered again. The store reads and the emits are here; what is held,
/// skipped and marked is `InboxHandOut`'s.
extension AppHandOut {
    /// Hands every inbox item of `features` to `sink`, oldest first across the features (the
    /// order they arrived in), in pages. Items that arrived meanwhile beyond
    /// `maximumDeferredInbox` were left in the store: another pass from where the last stopped
    /// hands them (at most 8 passes; then a resync follows). Items the sink was handed before
    /// (and has not acknowledged) are skipped.
    func replayInbox(_ router: isolated DeliveryRouter, features: [String], to sink: any DeliveryEventSink) async {
        let store = router.store, key = ObjectIdentifier(sink), features = Set(features).sorted()
        var cursor: InboxID?
        passes: for _ in 0..<8 {
            state.startPass(key)
            for _ in 0..<10_000 {
                guard router.isAttached(key) else { break }
                let after = cursor
                let page: [InboxEntry]
                do {
                    page = try await router.worker.run { try store.inbox.pending(featureIDs: features, after: after, limit: 500) }
                } catch {
                    // The rest of the inbox stays stored; a replay tries again later.
                    router.noteStoreError(error, "could not read the inbox of features \(features.joined(separator: ",")) to hand it to an app")
                    state.replayFailed(key)
                    break passes
                }
                guard let last = page.last, router.isAttached(key) else { break }
                cursor = last.id
                noteDamagedIDs(router, in: page)
                guard await hand(router, page, to: [sink], replay: true) else { break passes }
            }
            await recordHeld(router, key)
            guard state.passesAgain(key), router.isAttached(key) else { break }
        }
        await endReplay(router, sink)
    }

    /// A replay left inbox items in the store after its last pass: hands `sink` every
    /// unacknowledged inbox item of its features that it was not handed yet.
    func resync(_ router: isolated DeliveryRouter, _ sink: any DeliveryEventSink) async {
        let key = ObjectIdentifier(sink)
        let features = router.attachments.features(of: key)
        guard !features.isEmpty else { return }
        guard state.beginReplay(key) else {
            state.replaying[key]?.resyncAfter = true
            return
        }
        await replayInbox(router, features: features.sorted(), to: sink)
    }

    /// The items `sink`'s connection shed, handed to it again (`DeliveryRouter.reoffer`).
    func reoffer(_ router: isolated DeliveryRouter, _ items: [ShedInboxItem], to sink: any DeliveryEventSink) async {
        let key = ObjectIdentifier(sink)
        guard !items.isEmpty, router.isAttached(key) else { return }
        // A replay ends in bounded time (bounded pages and passes) or with the sink's detach.
        // After 1 000 replays in a row the items are left to the next attach (they stay in the
        // inbox, unacknowledged).
        var waits = 0
        while state.replaying[key] != nil, waits < 1_000 {
            waits += 1
            await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
                if state.replaying[key] != nil { state.replaying[key]?.waiters.append(waiter) } else { waiter.resume() }
            }
        }
        guard router.isAttached(key), state.beginReplay(key, reoffer: true) else { return }
        var marks: [Int64: Bool] = [:]
        for item in items { marks[item.inboxID] = item.redelivery }
        let ids = marks.keys.sorted(), store = router.store
        for start in stride(from: 0, to: ids.count, by: 500) {
            let chunk = ids[start..<min(start + 500, ids.count)].map(InboxID.init(rawValue:))
            guard router.isAttached(key) else { break }
            let entries: [InboxEntry]
            do {
                entries = try await router.worker.run { try store.inbox.entries(ids: chunk) }
            } catch {
                router.counters.storeErrors &+= 1
                router.logger.error("could not read shed inbox items to offer them again", metadata: ["error": "\(error)"])
                break
            }
            // Their delivery is recorded already (they were handed once): no second record.
            guard router.isAttached(key), let events = state.reoffered(entries, to: key, marks: marks) else { break }
            noteDamagedIDs(router, in: entries)
            for event in events { sink.emit(event) }
            router.counters.inboxDelivered &+= UInt64(events.count)
            router.counters.inboxReoffered &+= UInt64(events.count)
        }
        await endReplay(router, sink)
    }

    /// Inbox rows whose event or session ID was damaged in the file are still handed out (the
    /// payload is whole): counted, and logged with their inbox IDs, each time they are read.
    private func noteDamagedIDs(_ router: isolated DeliveryRouter, in entries: [InboxEntry]) {
        let damaged = entries.filter(\.hasDamagedID).map(\.id.rawValue)
        guard !damaged.isEmpty else { return }
        router.counters.inboxDamagedIDs &+= UInt64(damaged.count)
        router.logger.warning("inbox items with an event or session id damaged in the state file: handed out by their payload", metadata: [
            "inboxIDs": "\(damaged.prefix(20).map(String.init).joined(separator: ","))", "count": "\(damaged.count)"])
    }

    /// Records in the store the delivery of the inbox entries held for `key`'s replay, before
    /// they are handed (`markDelivered` must precede a hand-out). Entries held while it runs are
    /// recorded too; at most `maximumDeferredInbox` are held per replay, so this ends. More may
    /// be held once it returned (its return is an await): `endReplay` looks again.
    private func recordHeld(_ router: isolated DeliveryRouter, _ key: ObjectIdentifier) async {
        let store = router.store
        for _ in 0...router.options.maximumDeferredInbox {
            let ids = state.takeUnrecorded(key)
            guard !ids.isEmpty else { return }
            do {
                _ = try await router.worker.run { try store.inbox.markDelivered(ids: ids) }
            } catch {
                router.counters.storeErrors &+= 1
                router.logger.error("could not mark inbox items delivered; offered again later", metadata: ["error": "\(error)"])
                // Not handed then, nor what was held after them: all stay in the inbox for
                // the next replay (`finishReplay`).
                return state.replayFailed(key)
            }
        }
    }

    /// Ends `sink`'s replay once the delivery of everything it holds is recorded: the inbox
    /// consumer holds entries stored meanwhile for the replay (not recorded by their inbox
    /// transaction, since the sink did not read live), at any await of the replay, including
    /// the return from `recordHeld`, where the task may hop back to the router's executor
    /// through its queue. So the last look at what is unrecorded and the end are one step,
    /// with no await between; an entry held during a record is recorded by the next round.
    /// Entries left beyond the hold's bound are only in the store: a resync hands them.
    func endReplay(_ router: isolated DeliveryRouter, _ sink: any DeliveryEventSink) async {
        let key = ObjectIdentifier(sink)
        for _ in 0...router.options.maximumDeferredInbox {
            guard state.holdsUnrecorded(key) else { break }
            await recordHeld(router, key)
        }
        // (Rounds used up with entries still unrecorded: `InboxHandOut.endReplay` hands none of
        // them and a retry follows.)
        state.resyncIfLeft(key)
        finishReplay(router, sink)
    }

    /// Hands a sink what arrived during its replay, in arrival order (skipping replayed items),
    /// and wakes the re-offers waiting for the replay's end. Only `endReplay` calls it.
    private func finishReplay(_ router: isolated DeliveryRouter, _ sink: any DeliveryEventSink) {
        let key = ObjectIdentifier(sink)
        guard let replay = state.endReplay(key) else { return }
        for waiter in replay.waiters { waiter.resume() }
        if replay.liveShed > 0 {
            router.counters.deferredLiveShed &+= replay.liveShed
            sink.reportShed(replay.liveShed)
        }
        if replay.handOutFailed {
            retryLater(router, key)
        } else if replay.resyncAfter {
            router.spawn { await $0.handOut.resync($0, sink) }
        }
        state.handHeld(replay, to: key) { event, inbox in
            sink.emit(event)
            if inbox { router.counters.inboxDelivered &+= 1 }
        }
    }
}
