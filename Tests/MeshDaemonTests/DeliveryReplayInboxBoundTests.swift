import Foundation
import Testing
@testable import MeshDaemon

/// Inbox items that arrive for an app while its inbox replay runs: at most
/// `maximumDeferredInbox` are held in memory, the rest stay in the store, and the replay hands
/// every one of them once, in arrival order.
@Suite("Replay deferral of inbox items", .serialized)
struct DeliveryReplayInboxBoundTests {
    @Test func inboxItemsArrivingDuringAReplayAreHeldBoundedAndAllHandedOnceInOrder() async throws {
        let bed = DeliveryTestBed()
        defer { Task { await bed.shutdown() } }
        var options = DeliveryTestBed.options()
        options.maximumDeferredInbox = 4
        let daemon = try await bed.start(name: "bounded-inbox", options: options)
        let sink = CollectingSink()
        _ = await daemon.router.attach(features: ["demo"], sink: sink)
        try await waitUntil("the attach's replay ended", timeout: 5) { await !daemon.router.isReplayingForTest(sink) }

        // A replay runs (as after events were shed) while 10 items arrive for the app.
        await daemon.router.beginReplayForTest(sink)
        let items = (1...10).map { makeInboxItem($0) }
        let receipts = try daemon.store.inbox.receive(from: "P", items: items, at: storeTestEpoch)
        let entries = zip(items, receipts).compactMap { item, receipt -> InboxEntry? in
            guard case .stored(let id) = receipt else { return nil }
            return InboxEntry(id: id, peer: "P", item: item, receivedAt: storeTestEpoch, deliveryCount: 0)
        }
        #expect(entries.count == 10)
        await daemon.router.hand(Array(entries.prefix(3)), to: [sink])
        await daemon.router.hand(Array(entries.dropFirst(3)), to: [sink])
        #expect(await daemon.router.heldForTest(sink) == 4, "held in memory: the bound, not all 10")
        #expect(await daemon.router.deferredInboxForTest(sink) == 4)
        #expect(sink.inboxIDs.isEmpty, "nothing reaches the app while its replay runs")

        // The replay hands everything (the 6 left in the store included), each once, in order.
        await daemon.router.replayInbox(features: ["demo"], to: sink)
        #expect(sink.inboxIDs == entries.map(\.id.rawValue))
        #expect(await daemon.router.deferredInboxForTest(sink) == nil)
        #expect(await !daemon.router.isReplayingForTest(sink))
    }

    /// Items arriving while a replay runs reach the app then for the first time: unmarked, also
    /// those the bound left in the store for a later pass. Their delivery is recorded all the
    /// same: an app that goes away without acking gets every one marked on its next attach.
    @Test func itemsArrivingDuringAReplayAreMarkedOnlyOnceTheAppHadThem() async throws {
        let bed = DeliveryTestBed()
        defer { Task { await bed.shutdown() } }
        var options = DeliveryTestBed.options()
        options.maximumDeferredInbox = 4
        let daemon = try await bed.start(name: "marks", options: options)
        let sink = CollectingSink()
        let attachment = await daemon.router.attach(features: ["demo"], sink: sink)
        try await waitUntil("the attach's replay ended", timeout: 5) { await !daemon.router.isReplayingForTest(sink) }

        await daemon.router.beginReplayForTest(sink)
        let entries = try daemon.storeInboxItems(count: 10)
        await daemon.router.hand(Array(entries.prefix(3)), to: [sink])
        await daemon.router.hand(Array(entries.dropFirst(3)), to: [sink])
        await daemon.router.replayInbox(features: ["demo"], to: sink)
        #expect(sink.inboxIDs == entries.map(\.id.rawValue))
        #expect(sink.markedInboxIDs.isEmpty, "first deliveries marked as redeliveries: \(sink.markedInboxIDs)")

        await daemon.router.detach(attachment.attachmentID)
        let next = CollectingSink()
        _ = await daemon.router.attach(features: ["demo"], sink: next)
        try await waitUntil("the next attach's replay ended", timeout: 5) { await !daemon.router.isReplayingForTest(next) }
        #expect(next.inboxIDs == entries.map(\.id.rawValue))
        #expect(next.markedInboxIDs == entries.map(\.id.rawValue), "an unacknowledged item comes marked to the next attachment")
    }

    /// What a connection shed is offered to its attachment again, with the mark it had; nothing
    /// else is: not what the app got, not what it acknowledged, not what it was never handed.
    @Test func reofferHandsOnlyShedItemsAgainWithTheirMark() async throws {
        let bed = DeliveryTestBed()
        defer { Task { await bed.shutdown() } }
        let daemon = try await bed.start(name: "reoffer")
        let sink = CollectingSink()
        _ = await daemon.router.attach(features: ["demo"], sink: sink)
        try await waitUntil("the attach's replay ended", timeout: 5) { await !daemon.router.isReplayingForTest(sink) }
        let entries = try daemon.storeInboxItems(count: 6)
        await daemon.router.hand(entries, to: [sink])
        #expect(sink.inboxIDs == entries.map(\.id.rawValue))
        _ = try await daemon.router.acknowledgeInbox(ids: [entries[0].id.rawValue])

        let shed = [entries[0], entries[2], entries[4]].map { ShedInboxItem(inboxID: $0.id.rawValue, redelivery: false) }
            + [ShedInboxItem(inboxID: 999, redelivery: false)]
        await daemon.router.reoffer(shed, to: sink)
        #expect(sink.inboxIDs == entries.map(\.id.rawValue) + [entries[2].id.rawValue, entries[4].id.rawValue])
        #expect(sink.markedInboxIDs.isEmpty)
        #expect(await daemon.router.counterValues()["delivery.inbox.reoffered"] == 2)
        #expect(await !daemon.router.isReplayingForTest(sink))
    }

    /// An app attached for several features gets the replayed inbox in the order it arrived,
    /// across the features (before, feature by feature), over page boundaries; other
    /// features' items are not handed.
    @Test func aReplayOfSeveralFeaturesHandsTheInboxInArrivalOrder() async throws {
        let bed = DeliveryTestBed()
        defer { Task { await bed.shutdown() } }
        let daemon = try await bed.start(name: "features")
        let features = ["alpha", "beta", "gamma", "other"]
        let items = (1...1_300).map { makeInboxItem($0, feature: features[($0 * 7 / 3) % features.count]) }
        let receipts = try daemon.store.inbox.receive(from: "P", items: items, at: storeTestEpoch)
        let ids = zip(items, receipts).compactMap { item, receipt -> Int64? in
            guard case .stored(let id) = receipt, item.featureID != "other" else { return nil }
            return id.rawValue
        }

        let page = try daemon.store.inbox.pending(featureIDs: ["gamma", "alpha", "beta", "alpha"], after: InboxID(rawValue: ids[10]), limit: 100)
        #expect(page.map(\.id.rawValue) == Array(ids.drop { $0 <= ids[10] }.prefix(100)))

        let sink = CollectingSink()
        _ = await daemon.router.attach(features: ["gamma", "alpha", "beta"], sink: sink)
        try await waitUntil("the attach's replay ended", timeout: 10) { await !daemon.router.isReplayingForTest(sink) }
        #expect(sink.inboxIDs.count == ids.count)
        #expect(sink.inboxIDs == ids, "not in arrival order")
    }
}

extension DeliveryRouter {
    /// Whether `sink`'s inbox replay runs.
    func isReplayingForTest(_ sink: any DeliveryEventSink) -> Bool {
        handOut.state.replaying[ObjectIdentifier(sink)] != nil
    }

    /// Deliveries held in memory for `sink` while its replay runs.
    func heldForTest(_ sink: any DeliveryEventSink) -> Int? {
        handOut.state.replaying[ObjectIdentifier(sink)]?.deferred.count
    }

    /// The count of inbox entries among them.
    func deferredInboxForTest(_ sink: any DeliveryEventSink) -> Int? {
        handOut.state.replaying[ObjectIdentifier(sink)]?.inboxHeld
    }
}
