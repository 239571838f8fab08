import Foundation
import MeshCrypto
import SessionMesh
import Testing
@testable import MeshDaemon

/// A realtime item sent to several peers waits for each peer's ack separately: a copy lost on
/// the way to one peer falls back to THAT peer's outbox, whatever the other peers did.
///
/// Written against the router's behaviour only (outboxes, counters, the ack handler), so the same
/// tests ran against the event-ID-keyed wait they replace: each failed there.
extension DeliveryIntegration {
    @Suite("Realtime acks per peer for a send to several peers", .serialized)
    struct DeliveryBroadcastAckTests {
        typealias Fixtures = DeliveryAckDeadlineTests

        static func peer(_ byte: UInt8) -> DeviceID { DeviceID(publicKey: Array(repeating: byte, count: 32)) }

        /// `peer`'s ack of `eventID`, through the handler that takes peers' datagrams.
        static func ack(_ eventID: UUID, from peer: DeviceID, _ router: isolated DeliveryRouter) {
            _ = router.consumer.handleRealtime(router, .realtimeAck(eventID: eventID), from: peer, path: .datagram)
        }

        static func outbox(_ daemon: RunningDaemon, _ peer: DeviceID) throws -> [UUID] {
            try daemon.store.outbox.list(peer: peer.description).map(\.eventID)
        }

        /// The router's ack counters read in one actor turn (so no deadline fires between them):
        /// acks in time, fallbacks, and the copies still waiting (`delivery.realtime.awaiting_ack`).
        struct AckCounts: Equatable {
            var acked: UInt64
            var fallbacks: UInt64
            var awaiting: Int
        }

        static func ackCounts(_ router: isolated DeliveryRouter) -> AckCounts {
            AckCounts(acked: router.counters.realtimeAcked, fallbacks: router.counters.realtimeFallbacks,
                      awaiting: router.sender.realtime.waits.count)
        }

        @Test func aSendToAllFallsBackOnlyToTheOutboxOfThePeerThatDidNotAck() async throws {
            let bed = DeliveryTestBed()
            defer { Task { await bed.shutdown() } }
            // Deadlines long enough that bob's ack is in time on a loaded machine.
            var options = DeliveryTestBed.options()
            options.minimumAckDeadline = 0.5
            options.maximumAckDeadline = 1
            let a = try await bed.start(name: "alice", options: options)
            let b = try await bed.start(name: "bob"), c = try await bed.start(name: "carol")
            _ = try await bed.nodes.pair(a.running, b.running)
            _ = try await bed.nodes.pair(a.running, c.running)
            try await waitUntil("alice's channels active", timeout: 15) {
                let toBob = await bothActive(a.running, b.running)
                return toBob ? await bothActive(a.running, c.running) : false
            }
            let sinkA = CollectingSink(), sinkB = CollectingSink(), sinkC = CollectingSink()
            _ = await a.router.attach(features: ["demo"], sink: sinkA)
            _ = await b.router.attach(features: ["demo"], sink: sinkB)
            _ = await c.router.attach(features: ["demo"], sink: sinkC)
            try await waitUntil("bob's and carol's apps reachable from alice", timeout: 5) {
                sinkA.reachable(b.id, "demo") && sinkA.reachable(c.id, "demo")
            }
            // Carol's daemon goes silent: her channel and presence stay up (the lease lasts 6 s),
            // but nothing reads what reaches her node, so no ack comes back.
            c.routerTask.cancel()
            _ = await c.routerTask.result

            let (envelope, encoded) = try RouterFixtures.envelope("to all", sequence: 1)
            let outcome = try await a.router.send(envelope, encoded: encoded, mode: 1, to: nil)
            #expect(outcome.outcome == "sent" && outcome.peers == 2)
            let eventID = envelope.metadata.eventID
            try await waitUntil("bob's app got it live", timeout: 5) { sinkB.envelopes.count == 1 }
            try await waitUntil("carol's copy in carol's outbox on alice", timeout: 5) {
                try Self.outbox(a, c.deviceID) == [eventID]
            }
            // Every copy settled (acked or fell back) before the counters are read: bob's ack may
            // still be on its way when carol's copy lands in her outbox.
            try await waitUntil("both copies acked or fallen back", timeout: 5) {
                let counts = await Self.ackCounts(a.router)
                return counts.acked + counts.fallbacks == 2
            }
            #expect(try Self.outbox(a, b.deviceID).isEmpty, "bob acked: his copy does not fall back")
            let counters = await a.router.counterValues()
            #expect(counters["delivery.realtime.acked"] == 1)
            #expect(counters["delivery.realtime.fallbacks"] == 1)
            #expect(counters["delivery.realtime.awaiting_ack"] == 0)
            #expect(sinkB.envelopes.first?.inboxID == 0, "bob's copy came live, not through his outbox")
            await bed.shutdown()
        }

        @Test func anAckClearsOnlyTheWaitOfThePeerThatSentIt() async throws {
            let bed = DeliveryTestBed()
            defer { Task { await bed.shutdown() } }
            let a = try await bed.start(name: "alice")
            let first = Self.peer(7), second = Self.peer(9), bystander = Self.peer(11)
            let both = try Fixtures.item("both"), secondOnly = try Fixtures.item("second only")
            // The waits, the acks and the count in one actor turn: the 50 ms deadlines cannot fire
            // in between, however loaded the machine.
            let counts = await Self.waitAndAck(a.router, both: both, secondOnly: secondOnly, first: first, second: second,
                                               bystander: bystander)
            #expect(counts.acked == 1)
            #expect(counts.awaiting == 2)
            #expect(counts.fallbacks == 0)

            try await waitUntil("both unacked copies in their own peers' outboxes", timeout: 5) {
                try Self.outbox(a, first) == [both.eventID] && Self.outbox(a, second) == [secondOnly.eventID]
            }
            #expect(await a.router.counters.realtimeFallbacks == 2)
            #expect(try Self.outbox(a, bystander).isEmpty)
            #expect(await a.router.noAckAwaited())
            // Adaptive floors per peer: the first peer's grew with its fallback; the second's
            // had one ack in time (shrunk to the minimum, its delay measured) and one fallback
            // (grown to 1.5 × the longer of the minimum and what its one measured delay asks
            // for: the delay + 4 × its first deviation, half the delay, so 3 × the delay).
            let minimum = DeliveryTestBed.options().minimumAckDeadline
            #expect(await a.router.peerStates[first]?.ackDeadlineFloor == minimum * 1.5)
            #expect(await a.router.peerStates[first]?.ackDelay == nil)
            let secondFloor = try #require(await a.router.peerStates[second]?.ackDeadlineFloor)
            let secondDelay = try #require(await a.router.peerStates[second]?.ackDelay)
            let expected = min(2, max(minimum, 3 * secondDelay) * 1.5)
            #expect(abs(secondFloor - expected) < 1e-9, "floor \(secondFloor), ack delay \(secondDelay)")
            #expect(await a.router.peerStates[bystander]?.ackDeadlineFloor == 0)
            await bed.shutdown()
        }

        /// `both` waits for the first and second peer's acks, `secondOnly` for the second's (50 ms
        /// floors); the second peer acks `both`, the first acks what only the second got. Counts
        /// read in the same turn.
        static func waitAndAck(_ router: isolated DeliveryRouter, both: DeliveryItem, secondOnly: DeliveryItem,
                               first: DeviceID, second: DeviceID, bystander: DeviceID) -> AckCounts {
            Fixtures.expectAcks(router, [(both, first, 0.05), (both, second, 0.05), (secondOnly, second, 0.05)])
            router.ensurePeer(bystander)
            ack(both.eventID, from: second, router)
            ack(secondOnly.eventID, from: first, router)
            return ackCounts(router)
        }

        /// Alice, with deadlines of 1 s (at most 2 s), and two items.
        static func alice(_ bed: DeliveryTestBed) async throws -> (RunningDaemon, [DeliveryItem]) {
            var options = DeliveryTestBed.options()
            options.maximumAckDeadline = 2
            let a = try await bed.start(name: "alice", options: options)
            return (a, [try Fixtures.item("one"), try Fixtures.item("two")])
        }

        /// `items` wait for each of `peers` (in both orders, so whichever peer a single slot per
        /// event kept, one of the items shows it).
        static func expectAcks(_ router: isolated DeliveryRouter, _ items: [DeliveryItem], from peers: [DeviceID]) {
            Fixtures.expectAcks(router, peers.map { (items[0], $0, floor: 1.0) } + peers.reversed().map { (items[1], $0, floor: 1.0) })
        }

        /// The copies wait for both peers; the first peer's channel goes down; the second peer
        /// acks both items: all in one actor turn, so no deadline fires in between. The counts
        /// right after the channel loss, and after the acks.
        static func loseFirstChannel(_ router: isolated DeliveryRouter, _ items: [DeliveryItem], first: DeviceID,
                                     second: DeviceID) -> (afterLoss: AckCounts, afterAcks: AckCounts) {
            expectAcks(router, items, from: [first, second])
            router.deactivated(first)
            let afterLoss = ackCounts(router)
            for item in items { ack(item.eventID, from: second, router) }
            return (afterLoss, ackCounts(router))
        }

        @Test func aChannelLossFallsBackOnlyThatPeersCopiesAtOnce() async throws {
            let bed = DeliveryTestBed()
            defer { Task { await bed.shutdown() } }
            let first = Self.peer(7), second = Self.peer(9)
            let (a, items) = try await Self.alice(bed)
            let eventIDs = Set(items.map(\.eventID))
            // The first peer's channel goes down: its copies fall back at once (in the same turn,
            // so before any deadline could pass); the second peer's keep waiting for its ack.
            let counts = await Self.loseFirstChannel(a.router, items, first: first, second: second)
            #expect(counts.afterLoss == Self.AckCounts(acked: 0, fallbacks: 2, awaiting: 2))
            #expect(counts.afterAcks == Self.AckCounts(acked: 2, fallbacks: 2, awaiting: 0))
            try await waitUntil("the first peer's copies in its outbox", timeout: 5) {
                try Set(Self.outbox(a, first)) == eventIDs
            }
            try await waitUntil("every ack deadline passed (the ack watchdog is idle)", timeout: 5) { await a.router.ackWatchdogIsIdle() }
            #expect(try Self.outbox(a, second).isEmpty, "the second peer acked both")
            #expect(await a.router.counters.realtimeFallbacks == 2)
            #expect(await a.router.noAckAwaited())
            await bed.shutdown()
        }

        @Test func unpairingOnePeerKeepsTheOtherPeersWaits() async throws {
            let bed = DeliveryTestBed()
            defer { Task { await bed.shutdown() } }
            let first = Self.peer(7), second = Self.peer(9)
            let (a, items) = try await Self.alice(bed)
            await Self.expectAcks(a.router, items, from: [first, second])
            // The first peer is unpaired: its copies are forgotten (they never fall back)...
            await a.router.unpaired(first)
            // ...the second peer's two copies still wait, or (on a machine slow enough that their
            // 1 s deadline passed meanwhile) fell back: either way two, not four, and not none.
            let counts = await Self.ackCounts(a.router)
            #expect(counts.awaiting + Int(counts.fallbacks) == 2, "\(counts)")
            // ...and the second peer's still fall back to its outbox at their deadline.
            try await waitUntil("the second peer's copies in its outbox", timeout: 5) {
                try Set(Self.outbox(a, second)) == Set(items.map(\.eventID))
            }
            try await waitUntil("every ack deadline passed (the ack watchdog is idle)", timeout: 5) { await a.router.ackWatchdogIsIdle() }
            #expect(try Self.outbox(a, first).isEmpty)
            #expect(await a.router.counters.realtimeFallbacks == 2)
            #expect(await a.router.noAckAwaited())
            await bed.shutdown()
        }
    }
}
