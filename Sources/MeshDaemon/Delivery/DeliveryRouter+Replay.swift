import Foundation

/// Inbox replays: what an attachment gets from the inbox after its attach, and the items its
/// connection shed, offered again.
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
            replaying[key]?.passAgain = false
            for _ in 0..<10_000 {
                guard isAttached(key) else { break }
                let after = cursor
                let page: [InboxEntry]
                do {
                    page = try await worker.run { try store.pendingInbox(featureIDs: features, after: after, limit: 500) }
                } catch {
                    // The rest of the inbox stays stored; a replay tries again later.
                    noteStoreError(error, "could not read the inbox of features \(features.joined(separator: ",")) to hand it to an app")
                    replaying[key]?.handOutFailed = true
                    break passes
                }
                guard let last = page.last, isAttached(key) else { break }
                cursor = last.id
                noteDamagedIDs(in: page)
                guard await hand(page, to: [sink], replay: true) else { break passes }
            }
            await recordHeld(key)
            guard replaying[key]?.passAgain == true, replaying[key]?.handOutFailed == false, isAttached(key) else { break }
        }
        if replaying[key]?.passAgain == true { replaying[key]?.resyncAfter = true }
        finishReplay(sink)
    }

    /// A replay left inbox items in the store after its last pass: hands `sink` every
    /// unacknowledged inbox item of its features that it was not handed yet.
    func resync(_ sink: any DeliveryEventSink) async {
        let key = ObjectIdentifier(sink)
        let features = Set(attachments.values.filter { ObjectIdentifier($0.sink) == key }.flatMap(\.features))
        guard !features.isEmpty else { return }
        guard replaying[key] == nil else {
            replaying[key]?.resyncAfter = true
            return
        }
        replaying[key] = SinkReplay()
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
        while replaying[key] != nil, waits < 1_000 {
            waits += 1
            await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
                if replaying[key] != nil { replaying[key]?.waiters.append(waiter) } else { waiter.resume() }
            }
        }
        guard isAttached(key), replaying[key] == nil else { return }
        replaying[key] = SinkReplay()
        var marks: [Int64: Bool] = [:]
        for item in items { marks[item.inboxID] = item.redelivery }
        let ids = marks.keys.sorted(), store = self.store
        for start in stride(from: 0, to: ids.count, by: 500) {
            let chunk = ids[start..<min(start + 500, ids.count)].map(InboxID.init(rawValue:))
            guard isAttached(key) else { break }
            let entries: [InboxEntry]
            do {
                entries = try await worker.run { try store.inboxEntries(ids: chunk) }
            } catch {
                counters.storeErrors &+= 1
                logger.error("could not read shed inbox items to offer them again", metadata: ["error": "\(error)"])
                break
            }
            // Their delivery is recorded already (they were handed once): no second record.
            guard isAttached(key), let given = handedOut[key] else { break }
            noteDamagedIDs(in: entries)
            for entry in entries where given.contains(entry.id.rawValue) && !acknowledgedInbox.contains(entry.id.rawValue) {
                sink.emit(.envelope(from: entry.peer, inboxID: entry.id.rawValue,
                                    redelivery: marks[entry.id.rawValue] ?? entry.isRedelivery,
                                    mode: entry.item.kind, encoded: entry.item.payload))
                counters.inboxDelivered &+= 1
                counters.inboxReoffered &+= 1
            }
        }
        await recordHeld(key)
        // What arrived meanwhile beyond the bound is only in the store: a replay hands it.
        if replaying[key]?.passAgain == true { replaying[key]?.resyncAfter = true }
        finishReplay(sink)
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
    /// recorded too; at most `maximumDeferredInbox` are held per replay, so this ends.
    func recordHeld(_ key: ObjectIdentifier) async {
        let store = self.store
        for _ in 0...options.maximumDeferredInbox {
            guard let ids = replaying[key]?.unrecorded, !ids.isEmpty else { return }
            replaying[key]?.unrecorded = []
            do {
                _ = try await worker.run { try store.markDelivered(ids: ids) }
            } catch {
                counters.storeErrors &+= 1
                logger.error("could not mark inbox items delivered; offered again later", metadata: ["error": "\(error)"])
                // Not handed then, nor what was held after them: all stay in the inbox for
                // the next replay (`finishReplay`).
                replaying[key]?.handOutFailed = true
                return
            }
        }
    }

    /// Ends the replay of `key` (if one runs) and wakes the re-offers waiting for it.
    func endReplay(_ key: ObjectIdentifier) -> SinkReplay? {
        guard let replay = replaying.removeValue(forKey: key) else { return nil }
        for waiter in replay.waiters { waiter.resume() }
        return replay
    }

    /// Hands a sink what arrived during its replay, in arrival order (skipping replayed items).
    func finishReplay(_ sink: any DeliveryEventSink) {
        let key = ObjectIdentifier(sink)
        guard let replay = endReplay(key) else { return }
        if replay.liveShed > 0 {
            counters.deferredLiveShed &+= replay.liveShed
            sink.reportShed(replay.liveShed)
        }
        if replay.handOutFailed {
            retryHandOutLater(sink)
        } else {
            handOutRetries[key] = nil
            if replay.resyncAfter { Task { await self.resync(sink) } }
        }
        var given = handedOut[key] ?? []
        for item in replay.deferred {
            switch item {
            case .entry(let entry):
                guard !replay.handOutFailed, !acknowledgedInbox.contains(entry.id.rawValue),
                      given.insert(entry.id.rawValue).inserted else { continue }
                sink.emit(.envelope(from: entry.peer, inboxID: entry.id.rawValue, redelivery: entry.isRedelivery,
                                    mode: entry.item.kind, encoded: entry.item.payload))
                counters.inboxDelivered &+= 1
            case .event(let event):
                sink.emit(event)
            }
        }
        handedOut[key] = given
    }
}
