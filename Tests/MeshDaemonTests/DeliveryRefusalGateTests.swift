import Foundation
import MeshCrypto
import Testing
@testable import MeshDaemon

/// A receiver that could not store a reliable batch (a full disk) must not acknowledge a later
/// one: the ack is cumulative, so the sender would delete the refused items unstored. Later
/// batches are dropped unacknowledged until the sender starts over from its last ack.
@Suite("Reliable batches after a refused one", .serialized)
struct DeliveryRefusalGateTests {
    /// Refuses inbox inserts of the sender sequences in `range`, as a full disk would.
    private static func refuse(_ databasePath: String, _ range: ClosedRange<Int>) throws {
        try alterStoreFile(databasePath, [("CREATE TRIGGER test_refuse_inbox BEFORE INSERT ON inbox WHEN NEW.sender_sequence "
                                           + "BETWEEN \(range.lowerBound) AND \(range.upperBound) BEGIN SELECT RAISE(ABORT, 'test: no room'); END", [])])
    }

    /// A sender that retries only after 30 s: whatever arrives sooner came without a retry.
    private static let patient: DeliveryRouterOptions = {
        var options = DeliveryTestBed.options()
        options.retryInitial = 30
        return options
    }()

    private static func allow(_ databasePath: String) throws {
        try alterStoreFile(databasePath, [("DROP TRIGGER test_refuse_inbox", [])])
    }

    /// Two daemons: B refuses the first batch; a second batch, sent later, finds room. Before,
    /// B stored and acked it, A deleted the refused items with that ack, and they never
    /// arrived. Now B drops it unacked; A starts over from its last ack; once B has room
    /// everything arrives, once, in order.
    @Test func aLaterBatchIsNotStoredBeforeTheRefusedOneAndNothingIsLost() async throws {
        let bed = DeliveryTestBed()
        defer { Task { await bed.shutdown() } }
        let folder = bed.nodes.temporaryFolder()
        let (a, b) = try await bed.pair(stateDirectoryB: folder)
        let sink = CollectingSink()
        _ = await b.router.attach(features: ["demo"], sink: sink)
        let database = folder + "/delivery.sqlite"
        try Self.refuse(database, 1...5)

        func send(_ range: ClosedRange<Int>) async throws {
            for index in range {
                let (envelope, encoded) = try RouterFixtures.envelope("r\(index)", sequence: UInt64(index))
                _ = try await a.router.send(envelope, encoded: encoded, mode: 2, to: b.id)
            }
        }
        try await send(1...5)
        try await waitUntil("B refused the first batch", timeout: 5) {
            await b.router.counterValues()["delivery.inbox.refused", default: 0] >= 5
        }
        try await send(6...10)
        try await waitUntil("B dropped or stored the later batch", timeout: 5) {
            let counters = await b.router.counterValues()
            return counters["delivery.inbox.dropped_after_refusal", default: 0] >= 5 || counters["delivery.inbox.stored", default: 0] >= 5
        }
        #expect(sink.envelopes.isEmpty, "stored past the refused batch: \(sink.envelopes.map { RouterFixtures.text($0.envelope) })")
        #expect(try await a.router.queue().count == 10, "A still holds every item")

        try Self.allow(database)
        try await waitUntil("all 10 arrived", timeout: 15) { sink.envelopes.count >= 10 }
        #expect(sink.envelopes.map { RouterFixtures.text($0.envelope) } == (1...10).map { "r\($0)" })
        try await waitUntil("A's outbox drained", timeout: 5) { try await a.router.queue().isEmpty }
    }

    /// After a refusal the receiver tells the sender once an app's ack has made room (0x0F),
    /// and the sender starts over at once. Without it the refused items came back only at the
    /// sender's retry delay, which doubles up to 30 s: here 30 s from the start, so the refused
    /// items arriving within 5 s shows the notice at work.
    @Test func theReceiverSaysWhenThereIsRoomAgainAndTheSenderResendsAtOnce() async throws {
        let bed = DeliveryTestBed()
        defer { Task { await bed.shutdown() } }
        let folder = bed.nodes.temporaryFolder()
        let (a, b) = try await bed.pair(optionsA: Self.patient, stateDirectoryB: folder)
        let sink = CollectingSink()
        _ = await b.router.attach(features: ["demo"], sink: sink)
        func send(_ range: ClosedRange<Int>) async throws {
            for index in range {
                let (envelope, encoded) = try RouterFixtures.envelope("r\(index)", sequence: UInt64(index))
                _ = try await a.router.send(envelope, encoded: encoded, mode: 2, to: b.id)
            }
        }
        try await send(1...3)
        try await waitUntil("the first three arrived", timeout: 5) { sink.envelopes.count >= 3 }

        let database = folder + "/delivery.sqlite"
        try Self.refuse(database, 4...6)
        try await send(4...6)
        try await waitUntil("B refused the next batch", timeout: 5) {
            await b.router.counterValues()["delivery.inbox.refused", default: 0] >= 1
        }
        try Self.allow(database)
        #expect(sink.envelopes.count == 3)

        // The app acks what it has: room again. B says so; A resends from its last ack at once.
        let acked = try await b.router.acknowledgeInbox(ids: sink.envelopes.map(\.inboxID))
        #expect(acked == 3)
        try await waitUntil("the refused items arrived long before A's 30 s retry", timeout: 5) { sink.envelopes.count >= 6 }
        #expect(sink.envelopes.map { RouterFixtures.text($0.envelope) } == (1...6).map { "r\($0)" })
        #expect(await b.router.counterValues()["delivery.inbox.room_announced"] == 1)
        #expect(await a.router.counterValues()["delivery.reliable.room_resends"] == 1)
        #expect(await a.router.counterValues()["delivery.reliable.retries", default: 0] == 0)
        try await waitUntil("A's outbox drained", timeout: 5) { try await a.router.queue().isEmpty }
    }

    /// An inbox smaller than the sender's batches: each resend stores what fits and refuses the
    /// rest, and each app ack brings the next part at once. Before, the resent batch (7 items
    /// into room for 5) was refused whole every time and the rest never arrived.
    @Test func aBatchLargerThanTheRoomLeftGetsThroughPartByPart() async throws {
        let bed = DeliveryTestBed()
        defer { Task { await bed.shutdown() } }
        let (a, b) = try await bed.pair(optionsA: Self.patient, storeOptionsB: DeliveryStoreOptions(maxInboxItems: 5, maxInboxItemsPerPeer: 5))
        for index in 1...12 {
            let (envelope, encoded) = try RouterFixtures.envelope("r\(index)", sequence: UInt64(index))
            _ = try await a.router.send(envelope, encoded: encoded, mode: 2, to: b.id)
        }
        try await waitUntil("B stored what fits", timeout: 5) { try await b.store.counts().inbox.items == 5 }
        let sink = CollectingSink()
        _ = await b.router.attach(features: ["demo"], sink: sink)
        // The app acks what it gets, as `meshctl watch` does, until it has all 12: each round
        // waits for more to arrive (at most 5 s), so the loop ends after at most 12 rounds.
        var acked = 0
        while acked < 12 {
            try await waitUntil("more than \(acked) items", timeout: 5) { sink.envelopes.count > acked }
            let ids = sink.envelopes.map(\.inboxID)
            _ = try await b.router.acknowledgeInbox(ids: Array(ids[acked...]))
            acked = ids.count
        }
        #expect(sink.envelopes.map { RouterFixtures.text($0.envelope) } == (1...12).map { "r\($0)" },
                "in order, once, long before A's 30 s retry")
        #expect(await a.router.counterValues()["delivery.reliable.retries", default: 0] == 0)
        try await waitUntil("A's outbox drained", timeout: 5) { try await a.router.queue().isEmpty }
    }

    /// Only the sender's new start (0x0E) opens the way — a batch that merely starts low enough
    /// may be a stale one — and it does even when the sender does not resend the refused items
    /// (they were cancelled there): the batch after it is stored.
    @Test func theSendersNewStartOpensTheWayAgain() async throws {
        let bed = DeliveryTestBed()
        defer { Task { await bed.shutdown() } }
        let folder = bed.nodes.temporaryFolder()
        let daemon = try await bed.start(name: "gate", stateDirectory: folder)
        let database = folder + "/delivery.sqlite"
        let peer = DeviceID(publicKey: [UInt8](repeating: 7, count: 32))
        func batch(_ range: ClosedRange<Int>) throws -> DeliveryInboxWork {
            .batch(try range.map { index in
                let (envelope, encoded) = try RouterFixtures.envelope("g\(index)", sequence: UInt64(index))
                return (sequence: UInt64(index), item: DeliveryItem(eventID: envelope.metadata.eventID, kind: 2, featureID: "demo",
                                                                    sessionID: envelope.metadata.sessionID, payload: encoded))
            })
        }
        func counter(_ name: String) async -> UInt64 { await daemon.router.counterValues()[name, default: 0] }

        await daemon.router.ensurePeer(peer)    // as for any peer whose message arrives
        try Self.refuse(database, 1...5)
        await daemon.router.queueForInbox(try batch(1...5), from: peer)
        try await waitUntil("refused", timeout: 5) { await counter("delivery.inbox.refused") >= 5 }
        try Self.allow(database)
        await daemon.router.queueForInbox(try batch(6...8), from: peer)
        try await waitUntil("dropped", timeout: 5) { await counter("delivery.inbox.dropped_after_refusal") >= 3 }
        await daemon.router.queueForInbox(try batch(1...8), from: peer)
        try await waitUntil("dropped too", timeout: 5) { await counter("delivery.inbox.dropped_after_refusal") >= 11 }
        #expect(await counter("delivery.inbox.stored") == 0)

        // The sender cancelled 1...5 and starts over after its last ack (0): 6... comes.
        await daemon.router.queueForInbox(.resend, from: peer)
        await daemon.router.queueForInbox(try batch(6...8), from: peer)
        try await waitUntil("stored", timeout: 5) { await counter("delivery.inbox.stored") >= 3 }
        #expect(try daemon.store.counts().inbox.items == 3)
    }
}
