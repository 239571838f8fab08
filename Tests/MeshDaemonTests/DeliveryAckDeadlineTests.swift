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
                if let wakeAt = router.realtime.expectAck(item, from: peer, floor: floor, roundTripNanoseconds: nil,
                                                          sentAt: router.now()) {
                    router.armAckWatchdog(at: wakeAt)
                }
            }
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
            let started = ContinuousClock.now
            // The slow peer's item first, at the longest deadline (500 ms); then the fast peer's (20 ms).
            await Self.expectAcks(a.router, [(slowItem, slow, 0.5), (fastItem, fast, 0)])
            try await waitUntil("the fast peer's item fell back", timeout: 0.3) {
                await a.router.realtime.waits.isWaiting(fastItem.eventID) == false
            }
            print("fast peer's item fell back after \(ContinuousClock.now - started) (deadline 20 ms; the other peer's: 500 ms)")
            #expect(await a.router.counters.realtimeFallbacks == 1)
            try await waitUntil("its outbox copy", timeout: 5) { try a.store.outbox.list(peer: fast.description).count == 1 }
            try await waitUntil("the slow peer's item in the outbox too", timeout: 5) {
                try a.store.outbox.list(peer: slow.description).count == 1
            }
            #expect(await a.router.realtime.waits.isEmpty)
            await bed.shutdown()
        }

        @Test func aShrunkDeadlineOfOnePeerIsNotHeldBackByItsEarlierLongerOne() async throws {
            let bed = DeliveryTestBed()
            defer { Task { await bed.shutdown() } }
            let a = try await bed.start(name: "alice")
            let peer = DeviceID(publicKey: Array(repeating: 7, count: 32))
            let early = try Self.item("early"), late = try Self.item("late")
            let started = ContinuousClock.now
            // The floor was high for the first item and shrank (acks in time) before the second.
            await Self.expectAcks(a.router, [(early, peer, 0.5), (late, peer, 0)])
            try await waitUntil("the later item with the shorter deadline fell back", timeout: 0.3) {
                await a.router.realtime.waits.isWaiting(late.eventID) == false
            }
            if ContinuousClock.now - started < .milliseconds(400) {
                #expect(await a.router.realtime.waits.isWaiting(early.eventID), "the earlier item waits for its own deadline")
            }
            try await waitUntil("both in the outbox", timeout: 5) { try a.store.outbox.list(peer: peer.description).count == 2 }
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
            #expect(await a.router.realtime.waits.isEmpty)
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
            #expect(await a.router.realtime.waits.isEmpty)
            #expect(try a.store.counts().outbox.items == 0)
            await bed.shutdown()
        }
    }
}

extension DeliveryRouter {
    /// No ack deadline is armed: every waiting item was acked, fell back or was dropped, so
    /// nothing can fall back later (what a test waits for instead of sleeping past deadlines).
    func ackWatchdogIsIdle() -> Bool { ackWatchdog == nil }
}
