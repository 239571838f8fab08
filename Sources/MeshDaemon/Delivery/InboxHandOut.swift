import Foundation

/// Which stored inbox entries go to which sink and when: the entries each sink was handed and
/// has not acknowledged (no sink sees an item twice live), the ids apps acknowledged (never
/// handed out again), the replay each sink runs after its attach with what it is given
/// meanwhile (held, bounded, handed once the replay ends so inbox items arrive in order), and
/// the sinks whose hand-out could not be recorded (no inbox item until a replay, retried with
/// backoff). Sinks are known by `ObjectIdentifier`; the router does the store reads and writes
/// and the emits, and passes the current time in.
struct InboxHandOut: Sendable {
    /// Inbox entries one replay holds at most (`maximumDeferredInbox`); beyond, another pass.
    let maximumDeferredInbox: Int
    /// Live realtime envelopes one replay holds at most (`maximumDeferredLive`); beyond, shed.
    let maximumDeferredLive: Int
    /// Longest backoff between hand-out retries, seconds.
    let retryMaximum: Double
    /// Inbox ids handed to each sink and not yet acknowledged.
    private(set) var handedOut: [ObjectIdentifier: Set<Int64>] = [:]
    /// Sinks replaying their inbox after an attach (or offering shed items again).
    var replaying: [ObjectIdentifier: SinkReplay] = [:]
    /// Sinks whose inbox hand-out failed to be recorded (a full disk).
    private(set) var retries: [ObjectIdentifier: HandOutRetry] = [:]
    /// The next `HandOutRetry.order`.
    private var nextRetryOrder: UInt64 = 0
    /// Inbox ids apps acknowledged (ids are never reused): never handed out again, even when a
    /// stale copy of the entry is still on its way (a replay page, a deferred delivery).
    private(set) var acknowledged: Set<Int64> = []
    private var acknowledgedOrder: [Int64] = []

    init(maximumDeferredInbox: Int, maximumDeferredLive: Int, retryMaximum: Double) {
        self.maximumDeferredInbox = maximumDeferredInbox
        self.maximumDeferredLive = maximumDeferredLive
        self.retryMaximum = retryMaximum
    }

    // MARK: - Sinks

    /// A sink attached: inbox items arriving from now on wait for its replay (so they follow
    /// the stored ones). False when one runs already. `reoffer`: the replay offers shed items
    /// again and reads nothing else from the store, so its end does not end a hand-out retry
    /// the sink waits for (`endReplay`).
    @discardableResult
    mutating func beginReplay(_ key: ObjectIdentifier, reoffer: Bool = false) -> Bool {
        guard replaying[key] == nil else { return false }
        replaying[key] = SinkReplay(readsStore: !reoffer)
        return true
    }

    /// The sink's last attachment ended: everything kept for it is forgotten (a later sink may
    /// get the same identifier). Returns its replay, whose waiters the caller resumes.
    mutating func forget(_ key: ObjectIdentifier) -> SinkReplay? {
        handedOut[key] = nil
        retries[key] = nil
        return replaying.removeValue(forKey: key)
    }

    /// Whether stored items go straight to `key` (no replay running, no retry waiting).
    func readsLive(_ key: ObjectIdentifier) -> Bool {
        replaying[key] == nil && retries[key] == nil
    }

    /// Holds a live event for `key`'s replay, if one runs (false: emit it now). A live realtime
    /// envelope (`inboxID` 0) is held within `maximumDeferredLive`, the excess shed (counted).
    mutating func holdLive(_ event: DeliveryEvent, for key: ObjectIdentifier) -> Bool {
        guard !replaying.isEmpty, let live = replaying[key]?.liveHeld else { return false }
        if case .envelope(_, inboxID: 0, _, _, _) = event {
            guard live < maximumDeferredLive else {
                replaying[key]?.liveShed &+= 1
                return true
            }
            replaying[key]?.liveHeld += 1
        }
        replaying[key]?.deferred.append(.event(event))
        return true
    }

    // MARK: - Hand-outs

    /// Decides a hand-out of `entries` to the (attached) sinks `keys`: sinks replaying hold them
    /// (unless this is `replay`, the replay's own page), sinks waiting for a retry get nothing,
    /// the rest get them now. `direct`: indices into `keys`; `ids`: the entries to record as
    /// delivered first (what some sink is about to get, not what it had, nor what was acked).
    mutating func plan(_ entries: [InboxEntry], to keys: [ObjectIdentifier], replay: Bool) -> HandOutPlan {
        var plan = HandOutPlan()
        for (index, key) in keys.enumerated() {
            if !replay, replaying[key] != nil {
                hold(entries, for: key)
            } else if replay || retries[key] == nil {
                plan.direct.append(index)
            }
        }
        for index in plan.direct {
            let given = handedOut[keys[index]]
            for entry in entries where given?.contains(entry.id.rawValue) != true
                && !acknowledged.contains(entry.id.rawValue) && plan.listed.insert(entry.id.rawValue).inserted {
                plan.ids.append(entry.id)
            }
        }
        return plan
    }

    /// Hands `key` the planned entries it has not had (their delivery recorded): calls `emit`
    /// with each and its redelivery mark, in order. A replay page that reads an entry held for
    /// this replay hands it with its held mark.
    mutating func give(_ entries: [InboxEntry], listed: Set<Int64>, to key: ObjectIdentifier, replay: Bool,
                       _ emit: (InboxEntry, _ redelivery: Bool) -> Void) {
        let held = replay ? replaying[key]?.heldMarks : nil
        var given = handedOut[key] ?? []
        for entry in entries where listed.contains(entry.id.rawValue) && !acknowledged.contains(entry.id.rawValue)
            && given.insert(entry.id.rawValue).inserted {
            emit(entry, held?[entry.id.rawValue] ?? entry.isRedelivery)
        }
        handedOut[key] = given
    }

    /// Holds entries for the replay running for `key`, bounded: the excess stays in the store,
    /// and the replay takes another pass. Their delivery is recorded before the replay ends.
    mutating func hold(_ entries: [InboxEntry], for key: ObjectIdentifier) {
        guard let held = replaying[key]?.inboxHeld else { return }
        let kept = entries.prefix(max(0, maximumDeferredInbox - held))
        if kept.count < entries.count { replaying[key]?.passAgain = true }
        replaying[key]?.inboxHeld += kept.count
        for entry in kept {
            replaying[key]?.heldMarks[entry.id.rawValue] = entry.isRedelivery
            replaying[key]?.unrecorded.append(entry.id)
            replaying[key]?.deferred.append(.entry(entry))
        }
    }

    /// The held entries of `key`'s replay whose delivery is not recorded yet (taken). None once
    /// the replay failed: it hands no held inbox entry, so there is nothing to record.
    mutating func takeUnrecorded(_ key: ObjectIdentifier) -> [InboxID] {
        guard let ids = replaying[key]?.unrecorded, !ids.isEmpty, replaying[key]?.handOutFailed == false else { return [] }
        replaying[key]?.unrecorded = []
        return ids
    }

    /// Whether `key`'s replay holds entries whose delivery must be recorded before it ends.
    func holdsUnrecorded(_ key: ObjectIdentifier) -> Bool {
        replaying[key].map { !$0.unrecorded.isEmpty && !$0.handOutFailed } ?? false
    }

    /// `key`'s replay could not read or record its hand-out: it stops, and hands nothing it
    /// holds (a retry follows).
    mutating func replayFailed(_ key: ObjectIdentifier) {
        replaying[key]?.handOutFailed = true
    }

    /// Starts another pass of `key`'s replay: whether the last one left entries in the store.
    mutating func startPass(_ key: ObjectIdentifier) {
        replaying[key]?.passAgain = false
    }

    /// Whether `key`'s replay should take another pass (entries left, nothing failed).
    func passesAgain(_ key: ObjectIdentifier) -> Bool {
        replaying[key]?.passAgain == true && replaying[key]?.handOutFailed == false
    }

    /// After `key`'s last pass: entries still left in the store are replayed once it ends.
    mutating func resyncIfLeft(_ key: ObjectIdentifier) {
        if replaying[key]?.passAgain == true { replaying[key]?.resyncAfter = true }
    }

    /// Ends `key`'s replay (nil when none ran); the caller resumes its waiters and hands what
    /// it held (`handHeld`). A replay that failed leaves the sink's retry to the caller; one
    /// that read the store and did not fail ends it; a re-offer of shed items does not (it
    /// handed the sink none of the stored items the retry is for). A replay ended while it
    /// holds entries whose delivery is not recorded fails too: no inbox entry reaches an app
    /// before its hand-out is durable, so it hands none of them (nor what it held after them:
    /// order), and a retry replays them.
    mutating func endReplay(_ key: ObjectIdentifier) -> SinkReplay? {
        guard var replay = replaying.removeValue(forKey: key) else { return nil }
        if !replay.unrecorded.isEmpty { replay.handOutFailed = true }
        if !replay.handOutFailed, replay.readsStore { retries[key] = nil }
        return replay
    }

    /// What an ended replay held goes out in arrival order through `emit` (with whether it is
    /// an inbox entry); inbox entries are skipped when the replay failed or the sink still
    /// waits for a hand-out retry (they stay in the store, so nothing overtakes what could not
    /// be handed: the retry's replay hands them), or when handed before or acknowledged.
    mutating func handHeld(_ replay: SinkReplay, to key: ObjectIdentifier, _ emit: (DeliveryEvent, _ inbox: Bool) -> Void) {
        var given = handedOut[key] ?? []
        let keepsEntries = replay.handOutFailed || retries[key] != nil
        for item in replay.deferred {
            switch item {
            case .entry(let entry):
                guard !keepsEntries, !acknowledged.contains(entry.id.rawValue),
                      given.insert(entry.id.rawValue).inserted else { continue }
                emit(entry.envelope(redelivery: entry.isRedelivery), true)
            case .event(let event):
                emit(event, false)
            }
        }
        handedOut[key] = given
    }

    /// Shed entries to offer `key` again, with the mark each was handed with: only entries
    /// handed to it and not acknowledged. Nil when nothing was handed to `key`.
    func reoffered(_ entries: [InboxEntry], to key: ObjectIdentifier, marks: [Int64: Bool]) -> [DeliveryEvent]? {
        guard let given = handedOut[key] else { return nil }
        return entries.filter { given.contains($0.id.rawValue) && !acknowledged.contains($0.id.rawValue) }
            .map { $0.envelope(redelivery: marks[$0.id.rawValue] ?? $0.isRedelivery) }
    }

    /// Apps acknowledged (deleted) these inbox ids: never handed out again. The most recent
    /// 100 000 to 200 000 are remembered.
    mutating func acknowledge(_ deleted: [Int64]) {
        for key in handedOut.keys { handedOut[key]?.subtract(deleted) }
        for id in deleted where acknowledged.insert(id).inserted { acknowledgedOrder.append(id) }
        if acknowledgedOrder.count > 200_000 {
            for id in acknowledgedOrder.prefix(100_000) { acknowledged.remove(id) }
            acknowledgedOrder.removeFirst(100_000)
        }
    }

    // MARK: - Retries

    /// `key`'s hand-out could not be recorded: no inbox item for it until a replay, due after a
    /// backoff from `now` (monotonic ns).
    mutating func retryLater(_ key: ObjectIdentifier, now: UInt64) {
        var retry = retries[key] ?? HandOutRetry(order: nextRetryOrder)
        if retries[key] == nil { nextRetryOrder &+= 1 }
        retry.failures += 1
        retry.dueAt = now &+ UInt64(retry.delay(maximum: retryMaximum) * 1e9)
        retries[key] = retry
    }

    /// Sinks whose retry is due at `now`, in the order their retries began (not the table's
    /// hash order); each is marked as running (no second start).
    mutating func startDueRetries(now: UInt64) -> [ObjectIdentifier] {
        guard !retries.isEmpty else { return [] }
        let due = retries.filter { $0.value.dueAt.map { $0 <= now } ?? false }.sorted { $0.value.order < $1.value.order }.map(\.key)
        for key in due { retries[key]?.dueAt = nil }
        return due
    }

    /// A due retry whose sink is gone.
    mutating func dropRetry(_ key: ObjectIdentifier) {
        retries[key] = nil
    }
}

/// What `InboxHandOut.plan` decided for one hand-out.
struct HandOutPlan {
    /// Indices of the sinks that get the entries now.
    var direct: [Int] = []
    /// Entries to record as delivered before, in order.
    var ids: [InboxID] = []
    /// The same, as raw ids.
    var listed = Set<Int64>()
}

extension InboxEntry {
    /// The event handing this entry to an app.
    func envelope(redelivery: Bool) -> DeliveryEvent {
        .envelope(from: peer, inboxID: id.rawValue, redelivery: redelivery, mode: item.kind, encoded: item.payload)
    }
}
