import Foundation
import Testing
@testable import MeshDaemon

/// Text columns keep every byte of what an app sent: a feature ID or peer name with an embedded
/// NUL (valid UTF-8, and accepted by the local API) must not be cut at the NUL, which would file
/// the item under another feature ("demo\0x" as "demo").
@Suite("DeliveryStore text columns")
struct StoreTextTests {
    @Test func aFeatureIDWithANULByteComesBackWhole() throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        let store = try DeliveryStore.open(path: dir.path())
        let feature = "demo\u{0}x", peer = "A\u{0}B"
        try store.outbox.enqueue(peer: peer, item: makeOutboxItem(1, feature: feature))
        try store.outbox.enqueue(peer: "A", item: makeOutboxItem(2, feature: "demo"))
        let pending = try store.outbox.pending(peer: peer)
        #expect(pending.map(\.item.featureID) == [feature])
        #expect(pending.map(\.peer) == [peer])
        #expect(try store.outbox.pending(peer: "A").map(\.item.featureID) == ["demo"])
        store.close()
    }
}
