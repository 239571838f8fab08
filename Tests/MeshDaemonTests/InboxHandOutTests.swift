import Foundation
import MeshCore
import Testing
@testable import MeshDaemon

/// `InboxHandOut` on its own: which stored inbox entries go to which sink and when, with no
/// router, store, loop or connection.
@Suite("InboxHandOut")
struct InboxHandOutTests {
    final class Sink: DeliveryEventSink {
        func emit(_ event: DeliveryEvent) {}
    }

    static func entries(_ ids: ClosedRange<Int64>, deliveryCount: Int = 0) -> [InboxEntry] {
        ids.map { InboxEntry(id: InboxID(rawValue: $0), peer: "P", item: makeInboxItem(Int($0)), receivedAt: storeTestEpoch,
                             deliveryCount: deliveryCount) }
    }

    static func handOut() -> InboxHandOut {
        InboxHandOut(maximumDeferredInbox: 4, maximumDeferredLive: 2, retryMaximum: 8)
    }

    /// Hands `entries` to `key` as the router does once the record succeeded: the ids and marks emitted.
    static func give(_ handOut: inout InboxHandOut, _ entries: [InboxEntry], _ plan: HandOutPlan, to key: ObjectIdentifier,
                     replay: Bool = false) -> [(Int64, Bool)] {
        var given: [(Int64, Bool)] = []
        handOut.give(entries, listed: plan.listed, to: key, replay: replay) { given.append(($0.id.rawValue, $1)) }
        return given
    }

    @Test func aSinkGetsEachEntryOnceAndNeverOneItAcknowledged() {
        var handOut = Self.handOut()
        let sink = Sink(), other = Sink()
        let keys = [ObjectIdentifier(sink), ObjectIdentifier(other)]
        let entries = Self.entries(1...3)
        let plan = handOut.plan(entries, to: keys, replay: false)
        #expect(plan.direct == [0, 1])
        #expect(plan.ids.map(\.rawValue) == [1, 2, 3], "each id recorded once for both sinks")
        #expect(Self.give(&handOut, entries, plan, to: keys[0]).map(\.0) == [1, 2, 3])
        #expect(Self.give(&handOut, entries, plan, to: keys[1]).map(\.1) == [false, false, false])
        // Handed again (a stale copy): nothing to record, nothing given.
        let again = handOut.plan(entries, to: keys, replay: false)
        #expect(again.ids.isEmpty)
        #expect(Self.give(&handOut, entries, again, to: keys[0]).isEmpty)
        // Acknowledged ids are never handed out again, to anyone.
        handOut.acknowledge([2])
        #expect(handOut.handedOut[keys[0]] == [1, 3])
        let third = Sink()
        let late = handOut.plan(entries, to: [ObjectIdentifier(third)], replay: false)
        #expect(late.ids.map(\.rawValue) == [1, 3])
    }

    @Test func aReplayingSinkHoldsEntriesBoundedAndHandsThemAfterInOrder() {
        var handOut = Self.handOut()
        let sink = Sink(), key = ObjectIdentifier(sink)
        let began = handOut.beginReplay(key), again = handOut.beginReplay(key)
        #expect(began && !again, "one replay at a time")
        #expect(!handOut.readsLive(key))
        // Live events wait too; realtime envelopes within their own bound, the excess shed.
        let live = DeliveryEvent.envelope(from: "P", inboxID: 0, redelivery: false, mode: 1, encoded: [1])
        let reachability = DeliveryEvent.reachability(peer: "P", featureID: "demo", reachable: true, reason: .channelActive)
        let held = [handOut.holdLive(live, for: key), handOut.holdLive(live, for: key), handOut.holdLive(live, for: key),
                    handOut.holdLive(reachability, for: key)]
        #expect(held == [true, true, true, true], "held, or shed (the third)")
        let otherSink = Sink()
        let notHeld = handOut.holdLive(live, for: ObjectIdentifier(otherSink))
        #expect(!notHeld, "a sink not replaying gets it now")
        // Stored entries arriving meanwhile are held up to 4, with their marks; the rest stay stored.
        let plan = handOut.plan(Self.entries(1...6, deliveryCount: 1), to: [key], replay: false)
        #expect(plan.direct.isEmpty && plan.ids.isEmpty)
        let unrecorded = handOut.takeUnrecorded(key), none = handOut.takeUnrecorded(key)
        #expect(unrecorded.map(\.rawValue) == [1, 2, 3, 4])
        #expect(none.isEmpty)
        #expect(handOut.passesAgain(key), "entries were left in the store")
        // The replay's own page hands entry 2 with its held mark, and records what is new.
        let page = Self.entries(1...2)
        let pagePlan = handOut.plan(page, to: [key], replay: true)
        #expect(pagePlan.direct == [0])
        #expect(Self.give(&handOut, page, pagePlan, to: key, replay: true).map(\.1) == [true, true])
        handOut.resyncIfLeft(key)
        guard let replay = handOut.endReplay(key) else {
            Issue.record("no replay ended")
            return
        }
        #expect(replay.liveShed == 1 && replay.resyncAfter && !replay.handOutFailed)
        var emitted: [(DeliveryEvent, Bool)] = []
        handOut.handHeld(replay, to: key) { emitted.append(($0, $1)) }
        // Two live envelopes, the reachability event, then the held entries not handed by the page.
        #expect(emitted.map(\.1) == [false, false, false, true, true])
        #expect(emitted.map(\.0).suffix(2) == Self.entries(3...4, deliveryCount: 1).map { $0.envelope(redelivery: true) })
        #expect(handOut.readsLive(key))
        let ended = handOut.endReplay(key)
        #expect(ended == nil)
    }

    @Test func aFailedReplayHandsNoHeldEntryAndItsRetryBacksOff() {
        var handOut = Self.handOut()
        let sink = Sink(), key = ObjectIdentifier(sink)
        handOut.beginReplay(key)
        _ = handOut.plan(Self.entries(1...2), to: [key], replay: false)
        handOut.replayFailed(key)
        #expect(!handOut.passesAgain(key))
        guard let replay = handOut.endReplay(key) else {
            Issue.record("no replay ended")
            return
        }
        var emitted = 0
        handOut.handHeld(replay, to: key) { _, _ in emitted += 1 }
        #expect(emitted == 0, "held entries stay in the store, so nothing overtakes them")
        // The retry: no inbox item for the sink until it is due; backoff 250 ms, then 500 ms.
        handOut.retryLater(key, now: 1_000)
        #expect(!handOut.readsLive(key))
        let plan = handOut.plan(Self.entries(3...3), to: [key], replay: false)
        #expect(plan.direct.isEmpty && plan.ids.isEmpty)
        let early = handOut.startDueRetries(now: 1_000 + 249_999_999)
        let due = handOut.startDueRetries(now: 1_000 + 250_000_000)
        let later = handOut.startDueRetries(now: 10_000_000_000)
        #expect(early.isEmpty && due == [key])
        #expect(later.isEmpty, "started once")
        handOut.retryLater(key, now: 0)
        #expect(handOut.retries[key]?.dueAt == 500_000_000)
        // A replay that succeeds ends the retry.
        handOut.beginReplay(key)
        _ = handOut.endReplay(key)
        #expect(handOut.retries[key] == nil && handOut.readsLive(key))
    }

    /// The replay's end must not hand an entry whose hand-out is not durable. The router's
    /// replay recorded what it held, then ended; but the return from that record is an await,
    /// and the inbox consumer held entries it had just stored (their transaction did not record
    /// their delivery: the sink was replaying) for the replay right then. The end handed them
    /// unrecorded, and after a restart or a reconnect the app got them again without the mark.
    @Test func aReplayEndedWithEntriesHeldAfterItsLastRecordHandsNoneOfThem() {
        var handOut = Self.handOut()
        let sink = Sink(), key = ObjectIdentifier(sink)
        handOut.beginReplay(key)
        _ = handOut.plan(Self.entries(1...2), to: [key], replay: false)
        #expect(handOut.takeUnrecorded(key).map(\.rawValue) == [1, 2], "recorded by the replay")
        // Held after the replay's last look at what is unrecorded.
        let late = handOut.plan(Self.entries(3...4), to: [key], replay: false)
        #expect(late.ids.isEmpty, "held, not recorded by the hand-out")
        guard let replay = handOut.endReplay(key) else {
            Issue.record("no replay ended")
            return
        }
        #expect(replay.handOutFailed, "ended as a failed replay: a retry hands the entries from the store")
        var emitted: [Int64] = []
        handOut.handHeld(replay, to: key) { event, inbox in
            if inbox, case .envelope(_, let id, _, _, _) = event { emitted.append(id) }
        }
        #expect(emitted.isEmpty, "no held entry, not even the recorded ones before them (order)")
        #expect(handOut.handedOut[key] == nil || handOut.handedOut[key]?.isEmpty == true)
    }

    /// What the router's end of a replay looks at: the entries to record before it may end.
    @Test func aReplayHoldsUnrecordedEntriesUntilTakenAndAFailedOneHasNothingToRecord() {
        var handOut = Self.handOut()
        let sink = Sink(), key = ObjectIdentifier(sink)
        handOut.beginReplay(key)
        #expect(!handOut.holdsUnrecorded(key))
        _ = handOut.plan(Self.entries(1...2), to: [key], replay: false)
        #expect(handOut.holdsUnrecorded(key))
        #expect(handOut.takeUnrecorded(key).count == 2)
        #expect(!handOut.holdsUnrecorded(key))
        _ = handOut.plan(Self.entries(3...4), to: [key], replay: false)
        #expect(handOut.holdsUnrecorded(key), "held after the last record: recorded before the replay ends")
        handOut.replayFailed(key)
        #expect(!handOut.holdsUnrecorded(key))
        #expect(handOut.takeUnrecorded(key).isEmpty, "none of it is handed, so none of it is recorded")
    }

    /// A sink waits for a hand-out retry (a replay could not record its hand-out: a full disk)
    /// when its connection re-offers shed items. The re-offer reads only those items, so its end
    /// keeps the retry, and the entries stored meanwhile stay in the store for the retry's
    /// replay (in order) instead of going out now. (Ending the retry here left them stored and
    /// the sink reading live: its app never got them while it stayed attached.)
    @Test func aReofferKeepsTheRetryItsSinkWaitsForAndHandsNoStoredEntry() {
        var handOut = Self.handOut()
        let sink = Sink(), key = ObjectIdentifier(sink)
        handOut.beginReplay(key, reoffer: true)
        _ = handOut.plan(Self.entries(1...2), to: [key], replay: false)
        handOut.replayFailed(key)
        guard let failed = handOut.endReplay(key) else {
            Issue.record("no replay ended")
            return
        }
        handOut.retryLater(key, now: 0)
        var emitted = 0
        handOut.handHeld(failed, to: key) { _, _ in emitted += 1 }
        #expect(emitted == 0)
        // The next round of shed items: entries stored during it are held, and it succeeds.
        let began = handOut.beginReplay(key, reoffer: true)
        #expect(began)
        _ = handOut.plan(Self.entries(3...4), to: [key], replay: false)
        let reachability = DeliveryEvent.reachability(peer: "P", featureID: "demo", reachable: true, reason: .channelActive)
        _ = handOut.holdLive(reachability, for: key)
        #expect(handOut.takeUnrecorded(key).map(\.rawValue) == [3, 4], "recorded before the round ends, as the router does")
        guard let round = handOut.endReplay(key) else {
            Issue.record("no replay ended")
            return
        }
        #expect(!round.handOutFailed)
        var kinds: [Bool] = []
        handOut.handHeld(round, to: key) { kinds.append($1) }
        #expect(kinds == [false], "the live event goes out; entries 3 and 4 wait in the store behind 1 and 2")
        #expect(handOut.retries[key] != nil && !handOut.readsLive(key), "the sink still waits for its retry")
        #expect(handOut.startDueRetries(now: 250_000_000) == [key], "the retry comes when due")
        // Its replay reads the store: when it succeeds, the retry ends.
        handOut.beginReplay(key)
        _ = handOut.endReplay(key)
        #expect(handOut.retries[key] == nil && handOut.readsLive(key))
    }

    @Test func reofferedEntriesAreOnlyThoseHandedAndNotAcknowledged() {
        var handOut = Self.handOut()
        let sink = Sink(), key = ObjectIdentifier(sink)
        let entries = Self.entries(1...3)
        #expect(handOut.reoffered(entries, to: key, marks: [:]) == nil, "nothing was handed to it")
        let plan = handOut.plan(Array(entries.prefix(2)), to: [key], replay: false)
        _ = Self.give(&handOut, Array(entries.prefix(2)), plan, to: key)
        handOut.acknowledge([1])
        let events = handOut.reoffered(entries, to: key, marks: [2: true])
        #expect(events == [entries[1].envelope(redelivery: true)])
    }

    @Test func forgettingASinkDropsEverythingKeptForIt() {
        var handOut = Self.handOut()
        let sink = Sink(), key = ObjectIdentifier(sink)
        let plan = handOut.plan(Self.entries(1...1), to: [key], replay: false)
        _ = Self.give(&handOut, Self.entries(1...1), plan, to: key)
        handOut.retryLater(key, now: 0)
        handOut.beginReplay(key)
        let forgotten = handOut.forget(key)
        #expect(forgotten != nil)
        #expect(handOut.handedOut[key] == nil && handOut.retries[key] == nil && handOut.replaying[key] == nil)
    }
}
