import Foundation
import MeshCrypto
import SessionMesh
import Testing
@testable import MeshDaemon

/// Realtime items waiting for their ack: each falls back at its own deadline, and none leaves an
/// outbox row behind for a device that was unpaired.
extension DeliveryIntegration {
    @Suite("Realtime ack deadlines and unpairing", .serialized)
    struct DeliveryAckDeadlineTests {
        static func item(_ text: String) throws -> DeliveryItem {
            let (envelope, encoded) = try RouterFixtures.envelope(text, sequence: 1)
            return DeliveryItem(eventID: envelope.metadata.eventID, kind: 1, featureID: "demo",
                                sessionID: envelope.metadata.sessionID, payload: encoded)
        }

        /// Registers items as sent and waiting for `peer`'s ack (nothing goes out, so no ack comes).
        static func expectAcks(_ router: isolated DeliveryRouter, _ items: [(DeliveryItem, DeviceID, floor: Double)]) {
            for (item, peer, floor) in items {
                router.ensurePeer(peer)
                if let wakeAt = router.sender.realtime.expectAck(item, from: peer, floor: floor, roundTripNanoseconds: nil,
                                                          sentAt: router.now()) {
                    router.sender.armAckWatchdog(router, at: wakeAt)
                }
            }
        }

        /// As `expectAcks`, returning the router's wall clock read just before (same actor turn):
        /// what the fallback rows' `createdAt` (the router's wall clock at each fallback) count from.
        static func expectAcksAt(_ router: isolated DeliveryRouter, _ items: [(DeliveryItem, DeviceID, floor: Double)]) -> Date {
            let registeredAt = router.wallNow()
            expectAcks(router, items)
            return registeredAt
        }

        /// The outbox row of `eventID` for `peer`.
        static func row(_ store: DeliveryStore, _ peer: DeviceID, _ eventID: UUID) throws -> OutboxSummary? {
            try store.outbox.list(peer: peer.description).first { $0.eventID == eventID }
        }

        /// The highest outbox sequence ever given to `peer` (kept when the peer's rows are dropped).
        static func lastSequence(_ store: DeliveryStore, _ peer: String) throws -> Int64 {
            try store.withConnection { db in
                try db.first("SELECT last_sequence FROM outbox_peer WHERE peer = ?", [.text(peer)], "test") { $0.int64(0) }
            } ?? 0
        }

        @Test func anItemFallsBackAtItsOwnDeadlineNotBehindAnotherPeersLongerOne() async throws {
            let bed = DeliveryTestBed()
            defer { Task { await bed.shutdown() } }
            let a = try await bed.start(name: "alice")
            let slow = DeviceID(publicKey: Array(repeating: 7, count: 32)), fast = DeviceID(publicKey: Array(repeating: 9, count: 32))
            let slowItem = try Self.item("slow"), fastItem = try Self.item("fast")
            // The slow peer's item first, at the longest deadline (500 ms); then the fast peer's (20 ms).
            let registeredAt = await Self.expectAcksAt(a.router, [(slowItem, slow, 0.5), (fastItem, fast, 0)])
            try await waitUntil("both items in their peers' outboxes", timeout: 5) {
                try Self.row(a.store, fast, fastItem.eventID) != nil && Self.row(a.store, slow, slowItem.eventID) != nil
            }
            // When each fell back, by the router's own clock at the fallback (each row's creation
            // time), not by when this test got round to looking: timing-proof on a loaded machine.
            let fastAfter = try #require(try Self.row(a.store, fast, fastItem.eventID)).createdAt.timeIntervalSince(registeredAt)
            let slowAfter = try #require(try Self.row(a.store, slow, slowItem.eventID)).createdAt.timeIntervalSince(registeredAt)
            print("fast peer's item fell back after \(fastAfter) s (deadline 20 ms), the slow peer's after \(slowAfter) s (500 ms)")
            #expect(fastAfter < 0.5, "the fast peer's item fell back before the slow peer's deadline")
            #expect(slowAfter >= 0.499, "the slow peer's item waited for its own deadline")
            #expect(await a.router.counters.realtimeFallbacks == 2)
            #expect(await a.router.noAckAwaited())
            await bed.shutdown()
        }

        @Test func aShrunkDeadlineOfOnePeerIsNotHeldBackByItsEarlierLongerOne() async throws {
            let bed = DeliveryTestBed()
            defer { Task { await bed.shutdown() } }
            let a = try await bed.start(name: "alice")
            let peer = DeviceID(publicKey: Array(repeating: 7, count: 32))
            let early = try Self.item("early"), late = try Self.item("late")
            // The floor was high for the first item and shrank (acks in time) before the second.
            let registeredAt = await Self.expectAcksAt(a.router, [(early, peer, 0.5), (late, peer, 0)])
            try await waitUntil("both in the outbox", timeout: 5) { try a.store.outbox.list(peer: peer.description).count == 2 }
            // When each fell back, by the router's clock at the fallback (the rows' creation time).
            let lateAfter = try #require(try Self.row(a.store, peer, late.eventID)).createdAt.timeIntervalSince(registeredAt)
            let earlyAfter = try #require(try Self.row(a.store, peer, early.eventID)).createdAt.timeIntervalSince(registeredAt)
            print("the later item fell back after \(lateAfter) s (deadline 20 ms), the earlier one after \(earlyAfter) s (500 ms)")
            #expect(lateAfter < 0.5, "the later item with the shorter deadline is not held back by the earlier one")
            #expect(earlyAfter >= 0.499, "the earlier item waits for its own deadline")
            await bed.shutdown()
        }

        @Test func unpairingLeavesNoOutboxRowEvenForAFallbackCommittedAfterIt() async throws {
            let bed = DeliveryTestBed()
            defer { Task { await bed.shutdown() } }
            let (a, b) = try await bed.pair()
            // Items waiting for bob's ack when he is unpaired (never sent, so no ack comes).
            let waiting = try (1...20).map { (try Self.item("waiting\($0)"), b.deviceID, floor: 0.3) }
            await Self.expectAcks(a.router, waiting)
            try await a.node.unpair(deviceID: b.id)
            try await waitUntil("alice's router forgot bob", timeout: 5) { await a.router.peerStates[b.deviceID] == nil }
            // The store worker is serial: this read runs after `unpaired` dropped bob's rows.
            _ = await a.router.counterValues()

            // A fallback whose commit lands after the drop (one that started just before the unpair).
            await a.router.fallBack(try Self.item("late"), to: b.deviceID)
            try await waitUntil("every fallback committed", timeout: 5) {
                let fallbacks = await a.router.counters.realtimeFallbacks
                return try Self.lastSequence(a.store, b.id) == Int64(fallbacks)
            }
            try await waitUntil("no outbox row for the unpaired device", timeout: 2) {
                try a.store.outbox.list(peer: b.id).isEmpty
            }
            // Past every deadline: nothing that waited for bob's ack comes back as a row.
            try await waitUntil("every ack deadline passed (the ack watchdog is idle)", timeout: 5) { await a.router.ackWatchdogIsIdle() }
            #expect(try a.store.outbox.list(peer: b.id).isEmpty)
            #expect(try a.store.counts().outbox.items == 0)
            #expect(await a.router.noAckAwaited())
            await bed.shutdown()
        }

        @Test func itemsWaitingForAnAckDoNotFallBackAfterTheirPeerWasUnpaired() async throws {
            let bed = DeliveryTestBed()
            defer { Task { await bed.shutdown() } }
            let a = try await bed.start(name: "alice")
            let peer = DeviceID(publicKey: Array(repeating: 7, count: 32))
            await Self.expectAcks(a.router, try (1...5).map { (try Self.item("w\($0)"), peer, floor: 0.05) })
            await a.router.unpaired(peer)
            try await waitUntil("every ack deadline passed (the ack watchdog is idle)", timeout: 5) { await a.router.ackWatchdogIsIdle() }
            #expect(await a.router.counters.realtimeFallbacks == 0)
            #expect(await a.router.noAckAwaited())
            #expect(try a.store.counts().outbox.items == 0)
            await bed.shutdown()
        }
    }
}

extension DeliveryRouter {
    /// No ack deadline is armed: every waiting item was acked, fell back or was dropped, so
    /// nothing can fall back later (what a test waits for instead of sleeping past deadlines).
    func ackWatchdogIsIdle() -> Bool { sender.ackWatchdog == nil }

    /// No realtime copy waits for its ack.
    func noAckAwaited() -> Bool { sender.realtime.waits.isEmpty }

    /// Falls `item` back to `peer`'s outbox as a late ack does (`DeliverySender.fallBack`).
    func fallBack(_ item: DeliveryItem, to peer: DeviceID) { sender.fallBack(self, item, to: peer) }
}
