import Foundation

/// Inbox replays: what an attachment gets from the inbox after its attach, and the items its
/// connection shed, offered again. The store reads and the emits are here; what is held,
/// skipped and marked is `InboxHandOut`'s.
extension DeliveryRouter {
    /// Hands every inbox item of `features` to `sink`, oldest first across the features (the
    /// order they arrived in), in pages. Items that arrived meanwhile beyond
    /// `maximumDeferredInbox` were left in the store: another pass from where the last stopped
    /// hands them (at most 8 passes; then a resync follows). Items the sink was handed before
    /// (and has not acknowledged) are skipped.
    func replayInbox(features: [String], to sink: any DeliveryEventSink) async {
        let store = self.store, key = ObjectIdentifier(sink), features = Set(features).sorted()
        var cursor: InboxID?
        passes: for _ in 0..<8 {
            handOut.startPass(key)
            for _ in 0..<10_000 {
                guard isAttached(key) else { break }
                let after = cursor
                let page: [InboxEntry]
                do {
                    page = try await worker.run { try store.inbox.pending(featureIDs: features, after: after, limit: 500) }
                } catch {
                    // The rest of the inbox stays stored; a replay tries again later.
                    noteStoreError(error, "could not read the inbox of features \(features.joined(separator: ",")) to hand it to an app")
                    handOut.replayFailed(key)
                    break passes
                }
                guard let last = page.last, isAttached(key) else { break }
                cursor = last.id
                noteDamagedIDs(in: page)
                guard await hand(page, to: [sink], replay: true) else { break passes }
            }
            await recordHeld(key)
            guard handOut.passesAgain(key), isAttached(key) else { break }
        }
        await endReplay(sink)
    }

    /// A replay left inbox items in the store after its last pass: hands `sink` every
    /// unacknowledged inbox item of its features that it was not handed yet.
    func resync(_ sink: any DeliveryEventSink) async {
        let key = ObjectIdentifier(sink)
        let features = attachments.features(of: key)
        guard !features.isEmpty else { return }
        guard handOut.beginReplay(key) else {
            handOut.replaying[key]?.resyncAfter = true
            return
        }
        await replayInbox(features: features.sorted(), to: sink)
    }

    /// `sink`'s connection shed these inbox items after the router handed them (a slow reader):
    /// hands them to it again, with the redelivery mark they had (its app never saw them), after
    /// what it was given so far. Only items handed to this sink and not acknowledged are offered
    /// again; the rest of its inbox is not (the app has it). While a replay runs for the sink
    /// this waits for its end, so when it returns the items were handed: the connection holds
    /// later inbox items back until then (`ShedInboxOrder.mustWait`), which keeps
    /// each peer's items in order.
    public func reoffer(_ items: [ShedInboxItem], to sink: any DeliveryEventSink) async {
        let key = ObjectIdentifier(sink)
        guard !items.isEmpty, isAttached(key) else { return }
        // A replay ends in bounded time (bounded pages and passes) or with the sink's detach.
        // After 1 000 replays in a row the items are left to the next attach (they stay in the
        // inbox, unacknowledged).
        var waits = 0
        while handOut.replaying[key] != nil, waits < 1_000 {
            waits += 1
            await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
                if handOut.replaying[key] != nil { handOut.replaying[key]?.waiters.append(waiter) } else { waiter.resume() }
            }
        }
        guard isAttached(key), handOut.beginReplay(key, reoffer: true) else { return }
        var marks: [Int64: Bool] = [:]
        for item in items { marks[item.inboxID] = item.redelivery }
        let ids = marks.keys.sorted(), store = self.store
        for start in stride(from: 0, to: ids.count, by: 500) {
            let chunk = ids[start..<min(start + 500, ids.count)].map(InboxID.init(rawValue:))
            guard isAttached(key) else { break }
            let entries: [InboxEntry]
            do {
                entries = try await worker.run { try store.inbox.entries(ids: chunk) }
            } catch {
                counters.storeErrors &+= 1
                logger.error("could not read shed inbox items to offer them again", metadata: ["error": "\(error)"])
                break
            }
            // Their delivery is recorded already (they were handed once): no second record.
            guard isAttached(key), let events = handOut.reoffered(entries, to: key, marks: marks) else { break }
            noteDamagedIDs(in: entries)
            for event in events { sink.emit(event) }
            counters.inboxDelivered &+= UInt64(events.count)
            counters.inboxReoffered &+= UInt64(events.count)
        }
        await endReplay(sink)
    }

    /// Inbox rows whose event or session ID was damaged in the file are still handed out (the
    /// payload is whole): counted, and logged with their inbox IDs, each time they are read.
    func noteDamagedIDs(in entries: [InboxEntry]) {
        let damaged = entries.filter(\.hasDamagedID).map(\.id.rawValue)
        guard !damaged.isEmpty else { return }
        counters.inboxDamagedIDs &+= UInt64(damaged.count)
        logger.warning("inbox items with an event or session id damaged in the state file: handed out by their payload", metadata: [
            "inboxIDs": "\(damaged.prefix(20).map(String.init).joined(separator: ","))", "count": "\(damaged.count)"])
    }

    /// Records in the store the delivery of the inbox entries held for `key`'s replay, before
    /// they are handed (`markDelivered` must precede a hand-out). Entries held while it runs are
    /// recorded too; at most `maximumDeferredInbox` are held per replay, so this ends. More may
    /// be held once it returned (its return is an await): `endReplay` looks again.
    func recordHeld(_ key: ObjectIdentifier) async {
        let store = self.store
        for _ in 0...options.maximumDeferredInbox {
            let ids = handOut.takeUnrecorded(key)
            guard !ids.isEmpty else { return }
            do {
                _ = try await worker.run { try store.inbox.markDelivered(ids: ids) }
            } catch {
                counters.storeErrors &+= 1
                logger.error("could not mark inbox items delivered; offered again later", metadata: ["error": "\(error)"])
                // Not handed then, nor what was held after them: all stay in the inbox for
                // the next replay (`finishReplay`).
                return handOut.replayFailed(key)
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
    func endReplay(_ sink: any DeliveryEventSink) async {
        let key = ObjectIdentifier(sink)
        for _ in 0...options.maximumDeferredInbox {
            guard handOut.holdsUnrecorded(key) else { break }
            await recordHeld(key)
        }
        // (Rounds used up with entries still unrecorded: `InboxHandOut.endReplay` hands none of
        // them and a retry follows.)
        handOut.resyncIfLeft(key)
        finishReplay(sink)
    }

    /// Hands a sink what arrived during its replay, in arrival order (skipping replayed items),
    /// and wakes the re-offers waiting for the replay's end. Only `endReplay` calls it.
    private func finishReplay(_ sink: any DeliveryEventSink) {
        let key = ObjectIdentifier(sink)
        guard let replay = handOut.endReplay(key) else { return }
        for waiter in replay.waiters { waiter.resume() }
        if replay.liveShed > 0 {
            counters.deferredLiveShed &+= replay.liveShed
            sink.reportShed(replay.liveShed)
        }
        if replay.handOutFailed {
            retryHandOutLater(key)
        } else if replay.resyncAfter {
            spawn { await $0.resync(sink) }
        }
        handOut.handHeld(replay, to: key) { event, inbox in
            sink.emit(event)
            if inbox { counters.inboxDelivered &+= 1 }
        }
    }
}
