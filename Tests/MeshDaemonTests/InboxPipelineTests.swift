import Foundation
import MeshCore
import MeshCrypto
import SessionMesh
import Testing
@testable import MeshDaemon

/// `InboxPipeline` on its own: the decisions the router takes for every received item, with no
/// router, loop, store or socket.
@Suite("InboxPipeline")
struct InboxPipelineTests {
    static let peer = DeviceID(publicKey: Array(repeating: 7, count: 32))
    static let other = DeviceID(publicKey: Array(repeating: 9, count: 32))

    static func item(_ text: String, feature: String = "demo", kind: UInt8 = 1) throws -> DeliveryItem {
        let (envelope, encoded) = try RouterFixtures.envelope(text, sequence: 1, feature: feature)
        return DeliveryItem(eventID: envelope.metadata.eventID, kind: kind, featureID: feature,
                            sessionID: envelope.metadata.sessionID, payload: encoded)
    }

    static func batch(_ pairs: (UInt64, DeliveryItem)...) -> DeliveryInboxWork {
        .batch(pairs.map { (sequence: $0.0, item: $0.1) })
    }

    @Test func aRealtimeItemGoesLiveOnceAndItsCopyIsADuplicate() throws {
        var pipeline = InboxPipeline(byteLimit: 1 << 20, dedupMemory: 100)
        let item = try Self.item("a")
        let verdict1 = pipeline.realtimeReceived(item, from: Self.peer, path: .datagram, appAttached: true)
        #expect(verdict1 == .live)
        let verdict2 = pipeline.realtimeReceived(item, from: Self.peer, path: .datagram, appAttached: true)
        #expect(verdict2 == .duplicate)
        let verdict3 = pipeline.realtimeReceived(item, from: Self.peer, path: .stream, appAttached: false)
        #expect(verdict3 == .duplicate)
        let toRecord = pipeline.takeSeenToRecord(), again = pipeline.takeSeenToRecord()
        #expect(toRecord == [Self.peer: [item.eventID]], "one record for the store's seen-set")
        #expect(again.isEmpty)
        #expect(pipeline.backlog.isEmpty && pipeline.bytes == 0)
    }

    @Test func withoutAnAppARealtimeItemTakesTheInboxAndLaterItemsOfItsFeatureFollowIt() throws {
        var pipeline = InboxPipeline(byteLimit: 1 << 20, dedupMemory: 100)
        let first = try Self.item("first"), second = try Self.item("second"), elsewhere = try Self.item("x", feature: "other")
        let verdict4 = pipeline.realtimeReceived(first, from: Self.peer, path: .datagram, appAttached: false)
        #expect(verdict4 == .queued)
        // An app attached meanwhile: the next item of that feature still follows the first.
        let verdict5 = pipeline.realtimeReceived(second, from: Self.peer, path: .datagram, appAttached: true)
        #expect(verdict5 == .queued)
        // Another feature, another peer's same feature: live.
        let verdict6 = pipeline.realtimeReceived(elsewhere, from: Self.peer, path: .datagram, appAttached: true)
        #expect(verdict6 == .live)
        let verdict7 = pipeline.realtimeReceived(try Self.item("p"), from: Self.other, path: .datagram, appAttached: true)
        #expect(verdict7 == .live)
        // A copy of a queued item arriving meanwhile is a duplicate (the stored one is handed out).
        let verdict8 = pipeline.realtimeReceived(first, from: Self.peer, path: .datagram, appAttached: true)
        #expect(verdict8 == .duplicate)
        let queuedBytes = DeliveryInboxWork.realtime(first, path: .datagram).byteCount
            + DeliveryInboxWork.realtime(second, path: .datagram).byteCount
        #expect(pipeline.bytes == queuedBytes)
        let taken = pipeline.takeBacklog()
        #expect(taken.count == 1 && taken[0].peer == Self.peer && taken[0].works.count == 2)
        pipeline.finished(taken[0].works, from: Self.peer)
        #expect(pipeline.bytes == 0 && pipeline.inFlight.isEmpty && pipeline.realtimeQueued.isEmpty)
        #expect(pipeline.peakBytes == queuedBytes)
        // Now stored and remembered: a late copy is a duplicate, a new item goes live again.
        pipeline.rememberStored(first.eventID)
        let verdict9 = pipeline.realtimeReceived(first, from: Self.peer, path: .datagram, appAttached: true)
        #expect(verdict9 == .duplicate)
        let verdict10 = pipeline.realtimeReceived(try Self.item("third"), from: Self.peer, path: .datagram, appAttached: true)
        #expect(verdict10 == .live)
    }

    @Test func aFullBacklogRefusesRealtimeItemsUntilItDrains() throws {
        let item = try Self.item("a")
        let size = DeliveryInboxWork.realtime(item, path: .datagram).byteCount
        var pipeline = InboxPipeline(byteLimit: size * 2, dedupMemory: 100)
        let verdict11 = pipeline.realtimeReceived(item, from: Self.peer, path: .datagram, appAttached: false)
        #expect(verdict11 == .queued)
        #expect(pipeline.hasRoom)
        let verdict12 = pipeline.realtimeReceived(try Self.item("b"), from: Self.peer, path: .datagram, appAttached: false)
        #expect(verdict12 == .queued)
        #expect(!pipeline.hasRoom)
        let refused = try Self.item("c")
        let verdict13 = pipeline.realtimeReceived(refused, from: Self.peer, path: .datagram, appAttached: false)
        #expect(verdict13 == .full)
        for (peer, works) in pipeline.takeBacklog() { pipeline.finished(works, from: peer) }
        #expect(pipeline.hasRoom)
        // The refused item was not remembered: its resend is taken.
        let verdict14 = pipeline.realtimeReceived(refused, from: Self.peer, path: .datagram, appAttached: false)
        #expect(verdict14 == .queued)
    }

    @Test func theBacklogIsTakenPerPeerInArrivalOrder() throws {
        var pipeline = InboxPipeline(byteLimit: 1 << 20, dedupMemory: 100)
        let a1 = try Self.item("a1", kind: 2), b1 = try Self.item("b1", kind: 2), a2 = try Self.item("a2", kind: 2)
        pipeline.queue(Self.batch((1, a1)), from: Self.peer)
        pipeline.queue(Self.batch((1, b1)), from: Self.other)
        pipeline.queue(.resend, from: Self.peer)
        pipeline.queue(Self.batch((2, a2)), from: Self.peer)
        let taken = pipeline.takeBacklog()
        #expect(taken.map(\.peer) == [Self.peer, Self.other])
        #expect(taken[0].works.flatMap(\.eventIDs) == [a1.eventID, a2.eventID])
        #expect(taken[0].works.count == 3)
        #expect(pipeline.backlog.isEmpty)
        #expect(pipeline.inFlight.count == 3, "in flight until their transaction ended")
    }

    @Test func aTransactionStoresEachNewItemOnceAndAcksUpToTheFirstUnstored() throws {
        var pipeline = InboxPipeline(byteLimit: 1 << 20, dedupMemory: 100)
        let items = try (1...4).map { try Self.item("r\($0)", kind: 2) }
        var bad = try Self.item("bad", kind: 2)
        bad.featureID = "not-its-feature"
        let seenBefore = try Self.item("seen", kind: 2)
        pipeline.rememberStored(seenBefore.eventID)
        let realtime = try Self.item("rt")
        let works: [DeliveryInboxWork] = [
            Self.batch((1, items[0]), (2, bad), (3, items[1]), (4, items[0]), (5, seenBefore)),
            .realtime(realtime, path: .datagram),
            Self.batch((6, items[2]), (7, items[3])),
        ]
        var awaiting = false
        let transaction = pipeline.transaction(works, awaitingResend: &awaiting)
        #expect(transaction.fresh.map(\.eventID) == [items[0], items[1], realtime, items[2], items[3]].map(\.eventID))
        #expect(transaction.fresh.map(\.senderSequence) == [1, 3, 0, 6, 7])
        #expect(transaction.refused == 1 && transaction.inboxDuplicates == 2 && transaction.realtimeDuplicates == 0)
        #expect(transaction.refusable)
        // All stored: everything acked.
        let all = transaction.acks(storedCount: 5)
        #expect(all.upTo == 7 && all.realtime.map(\.0) == [realtime.eventID] && all.unstored == 0 && !all.refusedBatch)
        // Only the first three fit: acked up to the item before the fourth fresh one.
        let part = transaction.acks(storedCount: 3)
        #expect(part.upTo == 5 && part.realtime.map(\.0) == [realtime.eventID])
        #expect(part.unstored == 2 && part.refusedBatch)
        // Nothing fits: no ack at all (the refused item before the first fresh one is acked).
        let none = transaction.acks(storedCount: 0)
        #expect(none.upTo == nil && none.realtime.isEmpty && none.unstored == 5)
    }

    @Test func afterARefusalBatchesWaitForTheResendMarker() throws {
        let pipeline = InboxPipeline(byteLimit: 1 << 20, dedupMemory: 100)
        let early = try Self.item("early", kind: 2), late = try Self.item("late", kind: 2)
        var awaiting = true
        let transaction = pipeline.transaction([Self.batch((4, early)), .resend, Self.batch((1, late))], awaitingResend: &awaiting)
        #expect(!awaiting)
        #expect(transaction.afterRefusal == 1)
        #expect(transaction.fresh.map(\.eventID) == [late.eventID])
    }

    @Test func itemsMustMatchTheirEnvelope() throws {
        let good = try Self.item("a")
        #expect(good.matchesEnvelope)
        var wrongKind = good
        wrongKind.kind = 9
        var wrongID = good
        wrongID.eventID = UUID()
        var wrongSession = good
        wrongSession.sessionID = UUID()
        var garbage = good
        garbage.payload = [1, 2, 3]
        for item in [wrongKind, wrongID, wrongSession, garbage] { #expect(!item.matchesEnvelope) }
    }
}

/// `DatagramAcks` and `InboundQueue`: the receive side's batching and ordering.
@Suite("DatagramAcks and InboundQueue")
struct DatagramAcksTests {
    final class Sink: DeliveryEventSink {
        func emit(_ event: DeliveryEvent) {}
    }

    @Test func acksQueuedOutsideABurstAskForOneLoopTaskAndGoInMessagesOf64() {
        var acks = DatagramAcks()
        let peer = InboxPipelineTests.peer
        let ids = (0..<130).map { _ in UUID() }
        let first = acks.queue(ids[0], to: peer)
        #expect(first, "the first schedules a flush")
        var scheduled = 0
        for id in ids.dropFirst() where acks.queue(id, to: peer) { scheduled += 1 }
        #expect(scheduled == 0)
        guard var taken = acks.take() else {
            Issue.record("nothing taken")
            return
        }
        #expect(!acks.flushScheduled)
        var messages: [DeliveryMessage] = []
        DatagramAcks.messages(taken[peer] ?? []) { messages.append($0) }
        #expect(messages == [.realtimeAcks(Array(ids[0..<64])), .realtimeAcks(Array(ids[64..<128])), .realtimeAcks(Array(ids[128...]))])
        acks.recycle(&taken)
        let none = acks.take()
        #expect(none == nil)
        var single: [DeliveryMessage] = []
        DatagramAcks.messages([ids[0]]) { single.append($0) }
        #expect(single == [.realtimeAck(eventID: ids[0])])
    }

    @Test func insideABurstItsEndFlushesTheSinksOnceAndTheAcks() {
        var acks = DatagramAcks()
        let sink = Sink(), other = Sink()
        let noBurst = acks.endBurst()
        #expect(noBurst == nil, "no burst ran")
        acks.emitted(to: sink)
        acks.burstStarted()
        let loopTask = acks.queue(UUID(), to: InboxPipelineTests.peer)
        #expect(!loopTask, "the burst's end flushes: no loop task")
        acks.emitted(to: sink)
        acks.emitted(to: other)
        acks.emitted(to: sink)
        guard var sinks = acks.endBurst() else {
            Issue.record("no burst")
            return
        }
        #expect(sinks.count == 2 && sinks[0] === sink && sinks[1] === other)
        #expect(acks.flushScheduled)
        acks.recycle(burstSinks: &sinks)
        let ended = acks.endBurst(), taken = acks.take()
        #expect(ended == nil)
        #expect(taken?[InboxPipelineTests.peer]?.count == 1)
    }

    @Test func inboundMessagesAreHandledAtOnceOnlyWhileNoneIsUnfinished() {
        var queue = InboundQueue()
        let peer = InboxPipelineTests.peer
        #expect(queue.handlesAtOnce)
        queue.append(InboundChannelMessage(peer: peer, path: .stream, bytes: [1]))
        queue.append(InboundChannelMessage(peer: peer, path: .stream, bytes: [2]))
        #expect(!queue.handlesAtOnce)
        let first = queue.nextMessage()
        #expect(first?.bytes == [1])
        queue.messageDone()
        #expect(!queue.handlesAtOnce, "the second is still queued")
        let second = queue.nextMessage()
        #expect(second?.bytes == [2])
        #expect(!queue.handlesAtOnce, "the second is being handled")
        queue.messageDone()
        #expect(queue.handlesAtOnce)
        #expect(queue.append(.paired(peer)).isEmpty)
        #expect(queue.append(.activated(peer)).isEmpty)
        let events = [queue.nextEvent(), queue.nextEvent(), queue.nextEvent()]
        #expect(events == [.paired(peer), .activated(peer), nil])
    }

    /// A device's unpairing is handled by the event consumer, its messages by the message
    /// consumer: a message it sent before must not be handled after the unpairing (it would
    /// register the device again). Its queued messages leave with the event, in their order
    /// relative to the others' untouched, and later ones are refused until it is paired again.
    @Test func anUnpairedDevicesQueuedMessagesLeaveWithTheEventAndLaterOnesAreRefused() {
        var queue = InboundQueue()
        let gone = InboxPipelineTests.peer, other = DeviceID(publicKey: Array(repeating: 3, count: 32))
        queue.append(InboundChannelMessage(peer: gone, path: .stream, bytes: [1]))
        queue.append(InboundChannelMessage(peer: other, path: .stream, bytes: [2]))
        queue.append(InboundChannelMessage(peer: gone, path: .datagram, bytes: [3, 3]))
        queue.append(InboundChannelMessage(peer: other, path: .stream, bytes: [4]))
        #expect(!queue.refuses(gone))
        let dropped = queue.append(.unpaired(gone))
        #expect(dropped.map(\.bytes) == [[1], [3, 3]])
        #expect(queue.refuses(gone) && !queue.refuses(other))
        #expect(queue.nextMessage()?.bytes == [2])
        queue.messageDone()
        #expect(queue.nextMessage()?.bytes == [4])
        queue.messageDone()
        #expect(queue.nextMessage() == nil && queue.handlesAtOnce, "nothing of the unpaired device is left, nor counted")
        #expect(queue.nextEvent() == .unpaired(gone))
        #expect(queue.append(.paired(gone)).isEmpty)
        #expect(!queue.refuses(gone), "paired again: its messages are handled")
    }

    /// A consumer that found its queue empty may get to store its waiter only after work was
    /// appended (an await on the router can hop through its loop, and the append's wake-up
    /// found no waiter): it must be resumed at once then, not wait until the router stops.
    @Test(.timeLimit(.minutes(1)))
    func aConsumerWaitingAfterWorkArrivedIsResumedAtOnce() async {
        var queue = InboundQueue()
        let peer = InboxPipelineTests.peer
        // The wake-up of an append that finds no waiter resumes nobody.
        #expect(queue.append(.activated(peer)).isEmpty)
        queue.append(InboundChannelMessage(peer: peer, path: .stream, bytes: [1]))
        let woken = queue.wakeable()
        #expect(woken.0 == nil && woken.1 == nil)
        // The consumers store their waiters afterwards: each returns (without the check they
        // would wait for good, and this test would hit its time limit).
        await withCheckedContinuation { queue.waitForEvent($0) }
        await withCheckedContinuation { queue.waitForMessage($0) }
        #expect(queue.nextEvent() == .activated(peer) && queue.nextMessage()?.bytes == [1])
    }
}
