import Foundation
import Testing
@testable import MeshDaemon

/// An inbox hand-out whose delivery cannot be recorded in the store (as on a full disk): the
/// app gets none of those items then — and none after them, which would overtake them — and
/// the router offers its inbox again, with backoff, while the app stays attached: every item
/// once, in order, without waiting for the app's next attach.
@Suite("Inbox hand-outs offered again after a failed record", .serialized)
struct DeliveryHandOutRetryTests {
    /// Makes every delivery record fail, as a full disk does, until `allow` is called.
    private struct RecordFailure {
        let databasePath: String

        func refuse() throws {
            try alterStoreFile(databasePath, [("CREATE TRIGGER test_refuse_hand_out BEFORE UPDATE OF delivery_count ON inbox "
                                               + "BEGIN SELECT RAISE(ABORT, 'test: no room for the record'); END", [])])
        }

        func allow() throws { try alterStoreFile(databasePath, [("DROP TRIGGER test_refuse_hand_out", [])]) }
    }

    /// A daemon with short hand-out retries and an app of feature "demo" attached to it, its
    /// attach's replay done.
    private func start(_ bed: DeliveryTestBed, name: String) async throws
        -> (daemon: RunningDaemon, failure: RecordFailure, sink: CollectingSink, attachmentID: UInt64) {
        let folder = bed.nodes.temporaryFolder()
        var options = DeliveryTestBed.options()
        options.handOutRetryMaximum = 0.5
        let daemon = try await bed.start(name: name, stateDirectory: folder, options: options)
        let sink = CollectingSink()
        let attachment = await daemon.router.attach(features: ["demo"], sink: sink)
        try await waitUntil("the attach's replay ended", timeout: 5) { await !daemon.router.isReplayingForTest(sink) }
        return (daemon, RecordFailure(databasePath: folder + "/delivery.sqlite"), sink, attachment.attachmentID)
    }

    @Test func aHandOutThatCannotBeRecordedIsOfferedAgainInOrderWithoutANewAttach() async throws {
        let bed = DeliveryTestBed()
        defer { Task { await bed.shutdown() } }
        let (daemon, failure, sink, _) = try await start(bed, name: "retry-live")

        try failure.refuse()
        let entries = try daemon.storeInboxItems(count: 10)
        #expect(await !daemon.router.hand(Array(entries.prefix(4)), to: [sink]), "the record failed")
        await daemon.router.hand(Array(entries.dropFirst(4)), to: [sink])
        // Tried again with backoff while the record keeps failing; nothing reaches the app.
        try await waitUntil("two more attempts", timeout: 10) {
            await daemon.router.counterValues()["delivery.inbox.hand_out_retries", default: 0] >= 2
        }
        #expect(sink.inboxIDs.isEmpty, "handed without a record, or later items first: \(sink.inboxIDs)")

        try failure.allow()
        try await waitUntil("every item handed", timeout: 10) { sink.inboxIDs.count >= entries.count }
        #expect(sink.inboxIDs == entries.map(\.id.rawValue), "each once, in order")
        #expect(sink.markedInboxIDs.isEmpty, "never handed before, so not marked: \(sink.markedInboxIDs)")
        #expect(try daemon.store.inbox.entries(ids: entries.map(\.id)).allSatisfy { $0.deliveryCount == 1 })

        // Recorded again: once that replay ended, a new item goes straight to the app.
        try await waitUntil("the retry's replay ended", timeout: 5) {
            let replaying = await daemon.router.isReplayingForTest(sink)
            let retries = await daemon.router.handOutRetryCountForTest()
            return !replaying && retries == 0
        }
        let later = try daemon.storeInboxItems(count: 1, from: 11)
        #expect(await daemon.router.hand(later, to: [sink]))
        #expect(sink.inboxIDs == (entries + later).map(\.id.rawValue))
    }

    /// A replay whose page cannot be recorded stops there: what arrived during it is not
    /// handed before the page either, and the next replay hands all of it, in order.
    @Test func aReplayThatCannotRecordHandsNothingAfterThePageAndIsRunAgain() async throws {
        let bed = DeliveryTestBed()
        defer { Task { await bed.shutdown() } }
        let (daemon, failure, sink, _) = try await start(bed, name: "retry-replay")
        // In the inbox, not handed yet (as after the app's connection shed them).
        let stored = try daemon.storeInboxItems(count: 6)
        try failure.refuse()

        await daemon.router.beginReplayForTest(sink)
        let arriving = try daemon.storeInboxItems(count: 3, from: 7)
        await daemon.router.hand(arriving, to: [sink])
        #expect(await daemon.router.deferredInboxForTest(sink) == 3, "held for after the replay")
        await daemon.router.replayInbox(features: ["demo"], to: sink)
        #expect(await !daemon.router.isReplayingForTest(sink))
        #expect(sink.inboxIDs.isEmpty, "nothing handed past a page that could not be recorded: \(sink.inboxIDs)")

        try failure.allow()
        try await waitUntil("every item handed", timeout: 10) { sink.inboxIDs.count >= 9 }
        #expect(sink.inboxIDs == (stored + arriving).map(\.id.rawValue), "each once, in order")
        #expect(sink.markedInboxIDs.isEmpty, "\(sink.markedInboxIDs)")
    }

    /// The app's connection offers shed items again (a re-offer round) while its hand-out
    /// waits for a retry: the round reads only those items, so it leaves the retry in place,
    /// and the items whose record failed still reach the app, in order, while it stays
    /// attached. (A round that ended the retry left them in the store until the next attach.)
    @Test func aReofferRoundLeavesTheRetryItsSinkWaitsFor() async throws {
        let bed = DeliveryTestBed()
        defer { Task { await bed.shutdown() } }
        let (daemon, failure, sink, _) = try await start(bed, name: "retry-reoffer")
        let handed = try daemon.storeInboxItems(count: 3)
        #expect(await daemon.router.hand(handed, to: [sink]))

        try failure.refuse()
        let waiting = try daemon.storeInboxItems(count: 3, from: 4)
        #expect(await !daemon.router.hand(waiting, to: [sink]), "the record failed")
        // The connection shed item 2 and offers it again.
        await daemon.router.reoffer([ShedInboxItem(inboxID: handed[1].id.rawValue, redelivery: false)], to: sink)
        #expect(await daemon.router.handOutRetryCountForTest() == 1, "the round kept the retry")
        #expect(Array(sink.inboxIDs.prefix(4)) == handed.map(\.id.rawValue) + [handed[1].id.rawValue])

        try failure.allow()
        try await waitUntil("the items whose record failed are handed", timeout: 10) { sink.inboxIDs.count >= 7 }
        #expect(Array(sink.inboxIDs.dropFirst(4)) == waiting.map(\.id.rawValue), "each once, in order")
        #expect(sink.markedInboxIDs.isEmpty, "\(sink.markedInboxIDs)")
    }

    /// An app that detaches while its hand-out waits leaves nothing behind; the next attach
    /// gets the items at once.
    @Test func aDetachForgetsTheRetryAndTheNextAttachGetsTheItems() async throws {
        let bed = DeliveryTestBed()
        defer { Task { await bed.shutdown() } }
        let (daemon, failure, first, attachmentID) = try await start(bed, name: "retry-detach")
        try failure.refuse()
        let entries = try daemon.storeInboxItems(count: 3)
        #expect(await !daemon.router.hand(entries, to: [first]))
        await daemon.router.detach(attachmentID)
        #expect(await daemon.router.handOutRetryCountForTest() == 0)

        try failure.allow()
        let next = CollectingSink()
        _ = await daemon.router.attach(features: ["demo"], sink: next)
        try await waitUntil("the next attach got the items", timeout: 5) { next.inboxIDs.count >= 3 }
        #expect(next.inboxIDs == entries.map(\.id.rawValue))
        #expect(first.inboxIDs.isEmpty)
    }
}

extension DeliveryRouter {
    /// Sinks waiting for their inbox to be offered again.
    func handOutRetryCountForTest() -> Int { handOut.state.retries.count }
}
