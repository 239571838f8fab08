import Foundation
import Testing
@testable import MeshDaemon

extension DeliveryIntegration {
    /// Inbox items of a feature no app attached expire after `inboxUnattachedExpiry`; items an
    /// app took, and items of a feature attached now, stay.
    @Suite("Inbox expiry of unattached features") struct DeliveryInboxExpiryTests {
        @Test func itemsOfAFeatureNoAppAttachedExpireAndAreCounted() async throws {
            let bed = DeliveryTestBed()
            var options = DeliveryTestBed.options()
            options.inboxUnattachedExpiry = 0.000_001
            let a = try await bed.start(name: "alice", options: options)
            let old = Date(timeIntervalSince1970: 1_000_000)
            let gone = (0..<3).map { makeInboxItem($0, feature: "gone") }
            try a.store.inbox.receive(from: "P", items: gone, at: old)
            try a.store.inbox.receive(from: "P", items: [makeInboxItem(3, feature: "demo")], at: old)
            let sink = CollectingSink()
            _ = await a.router.attach(features: ["demo"], sink: sink)
            try await waitUntil("the demo item is handed out", timeout: 5) {
                sink.all.contains { if case .envelope = $0 { true } else { false } }
            }
            let clock = ContinuousClock(), started = clock.now
            await a.router.expireUnattachedInbox()
            let elapsed = clock.now - started
            #expect(try a.store.inbox.pending(featureID: "gone").isEmpty, "the unattached feature's items expired")
            #expect(try a.store.inbox.pending(featureID: "demo").count == 1, "the attached feature's item stays")
            #expect(try a.store.counts().inbox.items == 1)
            #expect(await a.router.counterValues()["delivery.inbox.expired"] == 3)
            // Expired IDs are remembered: the sender's resend is a duplicate.
            #expect(try a.store.inbox.receive(from: "P", items: [gone[0]], at: old) == [.duplicate])
            print("delivery figure: 3 unattached inbox items expired in \(elapsed)")
            await bed.shutdown()
        }

        @Test func anExpiryOfZeroKeepsEverything() async throws {
            let bed = DeliveryTestBed()
            var options = DeliveryTestBed.options()
            options.inboxUnattachedExpiry = 0
            let a = try await bed.start(name: "alice", options: options)
            try a.store.inbox.receive(from: "P", items: [makeInboxItem(0, feature: "gone")], at: Date(timeIntervalSince1970: 1_000_000))
            await a.router.expireUnattachedInbox()
            #expect(try a.store.inbox.pending(featureID: "gone").count == 1)
            await bed.shutdown()
        }
    }
}

@Suite("Inbox expiry in the store")
struct StoreInboxExpiryTests {
    @Test func onlyOldItemsNoAppTookOfUnkeptFeaturesExpireAndTheirIDsAreRemembered() throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        let store = try DeliveryStore.open(path: dir.path())
        defer { store.close() }
        let gone = (0..<3).map { makeInboxItem($0, feature: "gone") }
        try store.inbox.receive(from: "P", items: gone, at: storeTestEpoch)
        try store.inbox.receive(from: "P", items: [makeInboxItem(5, feature: "kept")], at: storeTestEpoch)
        try store.inbox.receive(from: "Q", items: [makeInboxItem(6, feature: "gone")], at: storeTestEpoch.addingTimeInterval(100))
        let taken = try #require(try store.inbox.pending(featureID: "gone").first)
        _ = try store.inbox.markDelivered(ids: [taken.id])
        let expired = try store.inbox.expire(receivedBefore: storeTestEpoch.addingTimeInterval(50), keeping: { $0 == "kept" })
        #expect(expired == ["gone", "gone"], "the taken item, the kept feature's and the newer one stay")
        #expect(try store.inbox.pending(featureID: "gone").count == 2)
        #expect(try store.counts().inbox.items == 3)
        #expect(store.tallies.inboxByPeer["P"]?.items == 2 && store.tallies.inboxByPeer["Q"]?.items == 1)
        #expect(try store.inbox.receive(from: "P", items: [gone[2]], at: storeTestEpoch) == [.duplicate], "a resend is a duplicate")
    }
}
