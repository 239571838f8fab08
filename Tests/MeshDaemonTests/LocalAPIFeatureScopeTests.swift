import Foundation
import MeshLocalAPI
import NIOCore
import Testing
@testable import MeshDaemon

extension DeliveryIntegration {
    /// `queue`, `queue.cancel` and `inbox.ack` under the per-uid feature allow-list: items of
    /// features a uid may not use are invisible to it (left out of `queue`, unknown ids to
    /// `queue.cancel` and `inbox.ack`).
    @Suite("Feature allow-list: queue and inbox")
    struct LocalAPIFeatureScopeTests {
        static let demoUser = PeerCredentials(pid: 1, uid: 1000, gid: 1000)
        static let root = PeerCredentials(pid: 1, uid: 0, gid: 0)

        static func dispatcher(_ daemon: RunningDaemon) -> LocalAPIDispatcher {
            LocalAPIDispatcher(controlPlane: daemon.node, defaultPairingLifetime: 60, router: daemon.router,
                               featureAllowList: FeatureAllowList(entries: [1000: ["demo"]]))
        }

        static func decode<T: Decodable>(_ type: T.Type, _ result: Result<ByteBuffer, LocalAPIErrorBody>) throws -> T {
            let body = try result.get()
            return try JSONDecoder().decode(T.self, from: Data(body.readableBytesView))
        }

        @Test func queueListsAndCancelsOnlyAllowedFeatures() async throws {
            let bed = DeliveryTestBed()
            defer { Task { await bed.shutdown() } }
            let a = try await bed.start(name: "alice")
            let demo = try a.store.outbox.enqueue(peer: "P", item: makeOutboxItem(1, feature: "demo"))
            let chat = try a.store.outbox.enqueue(peer: "P", item: makeOutboxItem(2, feature: "chat"))
            let dispatcher = Self.dispatcher(a)

            let seen = try Self.decode(MeshQueueReply.self, await dispatcher.perform(.queue, credentials: Self.demoUser))
            #expect(seen.items.map(\.featureID) == ["demo"])
            #expect(seen.items.map(\.id) == [UInt64(demo.id.rawValue)])
            let all = try Self.decode(MeshQueueReply.self, await dispatcher.perform(.queue, credentials: Self.root))
            #expect(Set(all.items.map(\.featureID)) == ["demo", "chat"])
            let stranger = try Self.decode(MeshQueueReply.self,
                                           await dispatcher.perform(.queue, credentials: PeerCredentials(pid: 1, uid: 1001, gid: 1001)))
            #expect(stranger.items.isEmpty)

            let refused = await dispatcher.perform(.queueCancel(id: chat.id.rawValue), credentials: Self.demoUser)
            #expect(refused.failureCode == "not-found")
            #expect(try a.store.outbox.list().map(\.featureID).sorted() == ["chat", "demo"], "the chat item must stay queued")
            let cancelled = await dispatcher.perform(.queueCancel(id: demo.id.rawValue), credentials: Self.demoUser)
            #expect(cancelled.failureCode == nil)
            #expect(try a.store.outbox.list().map(\.featureID) == ["chat"])
            let byRoot = await dispatcher.perform(.queueCancel(id: chat.id.rawValue), credentials: Self.root)
            #expect(byRoot.failureCode == nil)
            #expect(try a.store.outbox.list().isEmpty)
            await bed.shutdown()
        }

        @Test func inboxAckLeavesItemsOfOtherFeaturesAlone() async throws {
            let bed = DeliveryTestBed()
            defer { Task { await bed.shutdown() } }
            let a = try await bed.start(name: "alice")
            try a.store.inbox.receive(from: "P", items: [makeInboxItem(1, feature: "demo"), makeInboxItem(2, feature: "chat")],
                                     at: storeTestEpoch)
            let demoID = try #require(try a.store.inbox.pending(featureID: "demo").first).id.rawValue
            let chatID = try #require(try a.store.inbox.pending(featureID: "chat").first).id.rawValue
            let dispatcher = Self.dispatcher(a)

            let refused = try Self.decode(MeshInboxAckReply.self,
                                          await dispatcher.perform(.inboxAck(ids: [chatID]), credentials: Self.demoUser))
            #expect(refused.acknowledged == 0)
            #expect(try a.store.inbox.pending(featureID: "chat").count == 1, "the chat item must stay in the inbox")

            // An id that names no item yet (the next one the inbox will assign) is not remembered
            // as acknowledged: the item that later gets it still reaches its app.
            let future = max(demoID, chatID) + 1
            let mixed = try Self.decode(MeshInboxAckReply.self,
                                        await dispatcher.perform(.inboxAck(ids: [demoID, chatID, future]), credentials: Self.demoUser))
            #expect(mixed.acknowledged == 1)
            #expect(try a.store.inbox.pending(featureID: "demo").isEmpty)
            #expect(try a.store.inbox.pending(featureID: "chat").count == 1)

            try a.store.inbox.receive(from: "P", items: [makeInboxItem(3, feature: "demo")], at: storeTestEpoch)
            let later = try #require(try a.store.inbox.pending(featureID: "demo").first).id.rawValue
            #expect(later == future)
            let sink = CollectingSink()
            _ = await a.router.attach(features: ["demo"], sink: sink)
            try await waitUntil("the later demo item is handed out", timeout: 5) {
                sink.all.contains { if case .envelope(_, let id, _, _, _) = $0 { id == later } else { false } }
            }

            let byRoot = try Self.decode(MeshInboxAckReply.self,
                                         await dispatcher.perform(.inboxAck(ids: [chatID, later]), credentials: Self.root))
            #expect(byRoot.acknowledged == 2)
            await bed.shutdown()
        }
    }
}
