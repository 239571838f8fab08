import Foundation
import MeshCore
import SessionMesh
import Testing
@testable import MeshDaemon

/// The slot rules of `SnapshotSlots` over a real store in a temporary folder (inline worker: no
/// thread, no router, no loop), and `DeliveryPeerState.routeSnapshot`.
@Suite("Snapshot slots")
struct SnapshotSlotsTests {
    static let at = Date(timeIntervalSince1970: 1_700_000_000)

    static func withSlots(_ body: (SnapshotSlots, DeliveryStore) async throws -> Void) async throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        let store = try DeliveryStore.open(path: dir.path())
        defer { store.close() }
        try await body(SnapshotSlots(store: store, worker: StoreWorker(inline: true)), store)
    }

    static func close(_ session: UUID, in store: DeliveryStore) throws {
        _ = try store.sessions.put(SessionRecord(sessionID: session, featureID: "demo", owner: "app", status: "closed",
                                                 updatedAt: at, revision: 1, sourcePeer: nil))
    }

    @Test func aPushGoesOutOnlyWhenNewerAndAReplyAlways() async throws {
        try await Self.withSlots { slots, _ in
            let (v2, bytes2) = try RouterFixtures.snapshot(revision: 2, state: "two")
            let first = try await slots.publish(v2, encoded: bytes2, isReply: false, at: Self.at)
            #expect(first.stored && first.message == DeliveryMessage.snapshotPush(bytes2).encode())
            let (v1, bytes1) = try RouterFixtures.snapshot(revision: 1, state: "one")
            let older = try await slots.publish(v1, encoded: bytes1, isReply: false, at: Self.at)
            #expect(!older.stored && older.message == nil, "an older push is neither stored nor sent")
            let again = try await slots.publish(v2, encoded: bytes2, isReply: false, at: Self.at)
            #expect(!again.stored && again.message == nil, "an equal revision is not sent again as a push")
            let reply = try await slots.publish(v1, encoded: bytes1, isReply: true, at: Self.at)
            #expect(!reply.stored && reply.message == DeliveryMessage.snapshotReply(bytes1).encode(),
                    "a reply goes out although the slot holds a higher revision")
            #expect(try await slots.outboundRevision(featureID: "demo", sessionID: RouterFixtures.session) == 2)
        }
    }

    @Test func aClosedSessionTakesOnlyItsClosingSnapshot() async throws {
        try await Self.withSlots { slots, store in
            try Self.close(RouterFixtures.session, in: store)
            let (snapshot, bytes) = try RouterFixtures.snapshot(revision: 5, state: "late")
            await #expect(throws: MeshError.sessionClosed(RouterFixtures.session.uuidString)) {
                _ = try await slots.publish(snapshot, encoded: bytes, isReply: false, at: Self.at)
            }
            #expect(try await slots.outboundRevision(featureID: "demo", sessionID: RouterFixtures.session) == nil)
            #expect(try await !slots.receive(snapshot, bytes: bytes, from: "P", isReply: false, at: Self.at).shown,
                    "a peer's push of the closed session is not taken")
            #expect(try await slots.latest(featureID: "demo", peer: "P", sessionID: RouterFixtures.session) == nil)
            var closing = snapshot
            closing.metadata.payloadType = SnapshotSlots.sessionClosedPayloadType
            let encoded = try SessionWireCodec.encode(closing)
            #expect(try await slots.publish(closing, encoded: encoded, isReply: false, at: Self.at).stored)
            #expect(try await slots.receive(closing, bytes: encoded, from: "P", isReply: false, at: Self.at).shown)
        }
    }

    @Test func aReceivedSnapshotIsShownWhenNewerOrAReply() async throws {
        try await Self.withSlots { slots, store in
            let (v3, bytes3) = try RouterFixtures.snapshot(revision: 3, state: "three")
            let (v2, bytes2) = try RouterFixtures.snapshot(revision: 2, state: "two")
            #expect(try await slots.receive(v3, bytes: bytes3, from: "P", isReply: false, at: Self.at).shown)
            #expect(try await !slots.receive(v2, bytes: bytes2, from: "P", isReply: false, at: Self.at).shown, "stale push")
            #expect(try await !slots.receive(v3, bytes: bytes3, from: "P", isReply: false, at: Self.at).shown, "same revision")
            #expect(try await slots.receive(v2, bytes: bytes2, from: "P", isReply: true, at: Self.at).shown, "a reply is shown")
            #expect(try await slots.receive(v2, bytes: bytes2, from: "Q", isReply: false, at: Self.at).shown,
                    "slots are per peer")
            #expect(try await slots.latest(featureID: "demo", peer: "P", sessionID: nil)?.encoded == bytes3,
                    "a lower revision never replaced the higher one")

            let other = UUID()
            try Self.close(other, in: store)
            let (closed, closedBytes) = try RouterFixtures.snapshot(revision: 9, state: "revive", session: other)
            #expect(try await !slots.receive(closed, bytes: closedBytes, from: "P", isReply: false, at: Self.at).shown,
                    "a push of a closed session is neither stored nor shown")
            #expect(try await slots.receive(closed, bytes: closedBytes, from: "P", isReply: true, at: Self.at).shown,
                    "a reply is shown (the app asked for it)")
            #expect(try await slots.latest(featureID: "demo", peer: "P", sessionID: other) == nil,
                    "but neither revives the closed session's slot")
        }
    }

    @Test func malformedAndOversizedRevisionsDoNotDecode() throws {
        #expect(SnapshotSlots.decode([0x01, 0x02]) == nil)
        let (huge, _) = try RouterFixtures.snapshot(revision: 0, state: "x")
        var big = huge
        big.revision = UInt64(Int64.max) + 1
        #expect(SnapshotSlots.decode(try SessionWireCodec.encode(big)) == nil, "a revision above Int64.max is malformed")
        let (fine, bytes) = try RouterFixtures.snapshot(revision: 7, state: "y")
        #expect(SnapshotSlots.decode(bytes)?.revision == fine.revision)
    }

    @Test func readsAndAnswersPickTheMostRecentlyUpdatedMatchingSlotByKey() throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        let store = try DeliveryStore.open(path: dir.path())
        defer { store.close() }
        let session = UUID(), other = UUID()
        func put(_ peer: String, _ feature: String, _ session: UUID?, _ seconds: Double, _ byte: UInt8) throws {
            let at = Date(timeIntervalSince1970: seconds)
            _ = try store.slots.putInbound(peer: peer, featureID: feature, sessionID: session, revision: 1, bytes: [byte], at: at)
            _ = try store.slots.putOutbound(featureID: feature + peer, sessionID: session, revision: 1, bytes: [byte], at: at)
        }
        try put("P", "a", session, 10, 1)
        try put("P", "a", other, 30, 2)
        try put("P", "b", session, 20, 3)
        try put("Q", "a", session, 5, 4)
        #expect(try store.slots.latestInbound(featureID: "a", peer: nil, sessionID: nil)?.bytes == [2])
        #expect(try store.slots.latestInbound(featureID: "a", peer: nil, sessionID: session)?.bytes == [1])
        #expect(try store.slots.latestInbound(featureID: "a", peer: "Q", sessionID: nil)?.bytes == [4])
        #expect(try store.slots.latestInbound(featureID: "a", peer: "Q", sessionID: session)?.bytes == [4])
        #expect(try store.slots.latestInbound(featureID: "c", peer: nil, sessionID: nil) == nil)
        #expect(try store.slots.latestOutbound(sessionID: session, featureID: nil)?.bytes == [3],
                "without a feature: any feature of the session")
        #expect(try store.slots.latestOutbound(sessionID: session, featureID: "aP")?.bytes == [1])
        #expect(try store.slots.latestOutbound(sessionID: UUID(), featureID: nil) == nil)
        // Keyed reads use the indexes, never a scan of the table.
        let plans = try store.queryPlans([
            "SELECT * FROM inbound_slot WHERE feature = 'a' AND session = x'00' ORDER BY updated_at DESC LIMIT 1",
            "SELECT * FROM inbound_slot WHERE feature = 'a' ORDER BY updated_at DESC LIMIT 1",
            "SELECT * FROM outbound_slot WHERE session = x'00' ORDER BY updated_at DESC LIMIT 1",
            "SELECT feature FROM session_directory WHERE session_id = x'00' UNION SELECT feature FROM timer_anchor WHERE session_id = x'00'",
        ])
        for plan in plans { #expect(!plan.contains { $0.hasPrefix("SCAN") }, "\(plan)") }
    }

    @Test func targetsNamingAPeerAreReplies() {
        #expect(!SnapshotSlots.isReply(to: nil) && !SnapshotSlots.isReply(to: "") && !SnapshotSlots.isReply(to: "all"))
        #expect(SnapshotSlots.isReply(to: "ABCD"))
    }

    @Test func aPeerRoutesASnapshotByItsChannelState() {
        var state = DeliveryPeerState(pendingCapacity: 4, retryInitial: 1)
        #expect(state.routeSnapshot([1], featureID: "a") == .buffered(collapsed: false))
        #expect(state.routeSnapshot([2], featureID: "b") == .buffered(collapsed: false))
        #expect(state.routeSnapshot([3], featureID: "a") == .buffered(collapsed: true), "the newer one of a feature replaces it")
        #expect(state.pending.snapshotCount == 2)
        state.active = true
        state.everActivated = true
        #expect(state.routeSnapshot([4], featureID: "a") == .push)
        state.active = false
        #expect(state.routeSnapshot([5], featureID: "a") == .onActivation, "after an activation the slot is pushed on the next")
        #expect(state.pending.snapshotCount == 2, "nothing more was buffered")
    }
}
