import Foundation
import MeshCrypto
import Testing
@testable import MeshDaemon

/// The realtime sender's decisions, driven without an actor, loop or socket: ack deadlines,
/// which copies fall back when their ack is late, the watchdog's wake-ups, one turn's datagrams.
struct RealtimeSenderTests {
    static let ms: UInt64 = 1_000_000

    static func peer(_ byte: UInt8) -> DeviceID { DeviceID(publicKey: Array(repeating: byte, count: 32)) }

    static func item() -> DeliveryItem {
        DeliveryItem(eventID: UUID(), kind: 1, featureID: "demo", sessionID: UUID(), payload: [1, 2, 3])
    }

    static func sender() -> RealtimeSender { RealtimeSender(minimumAckDeadline: 0.020, maximumAckDeadline: 0.5) }

    @Test func theDeadlineIsTheLargestTermWithinTheBounds() {
        var sender = Self.sender()
        let peer = Self.peer(1)
        let items = (0..<4).map { _ in Self.item() }
        #expect(sender.expectAck(items[0], from: peer, floor: 0, roundTripNanoseconds: nil, sentAt: 0) == 20 * Self.ms)
        _ = sender.expectAck(items[1], from: peer, floor: 0.1, roundTripNanoseconds: 10 * Int64(Self.ms), sentAt: 0)
        _ = sender.expectAck(items[2], from: peer, floor: 0, roundTripNanoseconds: 50 * Int64(Self.ms), sentAt: 0)
        _ = sender.expectAck(items[3], from: peer, floor: 9, roundTripNanoseconds: nil, sentAt: 0)
        #expect(sender.waits.deadline(of: items[1].eventID, for: peer) == 100 * Self.ms)
        #expect(sender.waits.deadline(of: items[2].eventID, for: peer) == 200 * Self.ms, "4 × RTT")
        #expect(sender.waits.deadline(of: items[3].eventID, for: peer) == 500 * Self.ms, "at most the maximum")
    }

    /// The watchdog is re-armed only for a deadline earlier than its next wake-up.
    @Test func theWatchdogIsArmedOnlyForAnEarlierDeadline() {
        var sender = Self.sender()
        let peer = Self.peer(1)
        #expect(sender.expectAck(Self.item(), from: peer, floor: 0.1, roundTripNanoseconds: nil, sentAt: 0) == 100 * Self.ms)
        #expect(sender.expectAck(Self.item(), from: peer, floor: 0.1, roundTripNanoseconds: nil, sentAt: Self.ms) == nil)
        #expect(sender.expectAck(Self.item(), from: Self.peer(2), floor: 0, roundTripNanoseconds: nil, sentAt: Self.ms) == 21 * Self.ms)
        #expect(sender.watchdogAt == 21 * Self.ms)
    }

    /// A late ack's copy falls back, earliest deadline first and whatever its peer; an acked copy
    /// and another peer's copy of the same event do not.
    @Test func lateCopiesExpireEarliestFirstAndAckedOnesDoNot() {
        var sender = Self.sender()
        let (x, y) = (Self.peer(1), Self.peer(2))
        let shared = Self.item(), acked = Self.item(), slow = Self.item()
        _ = sender.expectAck(shared, from: x, floor: 0.05, roundTripNanoseconds: nil, sentAt: 0)
        _ = sender.expectAck(shared, from: y, floor: 0.03, roundTripNanoseconds: nil, sentAt: 0)
        _ = sender.expectAck(acked, from: x, floor: 0.04, roundTripNanoseconds: nil, sentAt: 0)
        _ = sender.expectAck(slow, from: x, floor: 0.25, roundTripNanoseconds: nil, sentAt: 0)
        #expect(sender.acked(acked.eventID, from: x, at: 10 * Self.ms) == 0.01)
        #expect(sender.acked(acked.eventID, from: x, at: 11 * Self.ms) == nil, "a duplicate ack")
        #expect(sender.acked(shared.eventID, from: Self.peer(3), at: 11 * Self.ms) == nil, "no copy for that peer")
        let first = sender.expire(now: 60 * Self.ms)
        #expect(first.expired.map(\.peer) == [y, x])
        #expect(first.expired.allSatisfy { $0.item.eventID == shared.eventID })
        #expect(first.wakeAt == 250 * Self.ms && sender.watchdogAt == 250 * Self.ms)
        let last = sender.expire(now: 250 * Self.ms)
        #expect(last.expired.map(\.item.eventID) == [slow.eventID])
        #expect(last.wakeAt == nil && sender.watchdogAt == .max && sender.waits.isEmpty)
        #expect(sender.expectAck(Self.item(), from: x, floor: 0, roundTripNanoseconds: nil, sentAt: 1_000 * Self.ms) != nil,
                "the next send arms the watchdog again")
    }

    @Test func aChannelLossStopsOnlyThatPeersCopies() {
        var sender = Self.sender()
        let (x, y) = (Self.peer(1), Self.peer(2))
        let item = Self.item()
        _ = sender.expectAck(item, from: x, floor: 0.1, roundTripNanoseconds: nil, sentAt: 0)
        _ = sender.expectAck(item, from: y, floor: 0.1, roundTripNanoseconds: nil, sentAt: 0)
        #expect(sender.stopWaiting(for: x).map(\.peer) == [x])
        #expect(sender.stopWaiting(item.eventID, for: x) == nil)
        let expiry = sender.expire(now: 200 * Self.ms)
        #expect(expiry.expired.map(\.peer) == [y], "the lost channel's copy does not fall back twice")
    }

    @Test func oneTurnsItemsAreQueuedPerPeerAndFlushedOnce() {
        var sender = Self.sender()
        let (x, y) = (Self.peer(1), Self.peer(2))
        #expect(sender.nothingQueued(for: x))
        #expect(sender.queue(UUID(), message: [0x01, 1], to: x) == true, "the first item schedules the flush")
        #expect(sender.queue(UUID(), message: [0x01, 2], to: x) == false)
        #expect(sender.queue(UUID(), message: [0x01, 3], to: y) == false)
        #expect(!sender.nothingQueued(for: x) && !sender.nothingQueued(for: y) && sender.nothingQueued(for: Self.peer(3)))
        guard var backlog = sender.takeBacklog() else { Issue.record("nothing taken"); return }
        #expect(backlog[x]?.map(\.message) == [[0x01, 1], [0x01, 2]] && backlog[y]?.count == 1)
        #expect(sender.takeBacklog() == nil && sender.nothingQueued(for: x))
        sender.recycle(&backlog)
        #expect(sender.queue(UUID(), message: [0x01, 4], to: x) == true, "the next turn schedules its own flush")
        #expect(sender.takeBacklog()?[x]?.map(\.message) == [[0x01, 4]])
    }

    /// The turn's datagrams leave peer by peer in the order the turn first queued to each peer
    /// (not in a hash order that changes from one process to the next).
    @Test func oneTurnsPeersAreFlushedInTheOrderTheyWereFirstQueuedTo() {
        var sender = Self.sender()
        let peers = [Self.peer(7), Self.peer(2), Self.peer(9), Self.peer(4), Self.peer(1)]
        for round in 0..<3 {
            for (index, peer) in peers.enumerated() { _ = sender.queue(UUID(), message: [0x01, UInt8(round), UInt8(index)], to: peer) }
        }
        guard var backlog = sender.takeBacklog() else { Issue.record("nothing taken"); return }
        #expect(backlog.map(\.peer) == peers)
        #expect(backlog.map { $0.elements.map(\.message[1]) } == Array(repeating: [0, 1, 2], count: peers.count))
        sender.recycle(&backlog)
        for peer in peers.reversed() { _ = sender.queue(UUID(), message: [0x01], to: peer) }
        #expect(sender.takeBacklog()?.map(\.peer) == peers.reversed(), "each turn has its own order")
    }

    /// Where a send to one peer goes: buffered before the first activation, to the outbox when
    /// unreachable or too large, else a datagram now (`atOnce`, nothing queued before it) or at
    /// the turn's end.
    @Test func aSendIsBufferedFallsBackOrGoesAsADatagram() {
        var sender = Self.sender()
        let peer = Self.peer(1)
        var state = DeliveryPeerState(pendingCapacity: 1, retryInitial: 1)
        #expect(sender.send(Self.item(), to: peer, state: &state, now: 0, atOnce: true) == .pending(droppedOldest: false))
        #expect(sender.send(Self.item(), to: peer, state: &state, now: 0, atOnce: true) == .pending(droppedOldest: true))
        state.everActivated = true
        #expect(sender.send(Self.item(), to: peer, state: &state, now: 0, atOnce: true) == .fallBack, "channel down")
        state.active = true
        #expect(sender.send(Self.item(), to: peer, state: &state, now: 0, atOnce: true) == .fallBack, "no app attached there")
        _ = state.presenceReceived(["demo"], now: 0, lease: 1)
        let first = Self.item()
        #expect(sender.send(first, to: peer, state: &state, now: 0, atOnce: true)
                == .sent(wakeAt: 20 * Self.ms, datagram: DeliveryMessage.realtime(first).encode(), scheduleFlush: false))
        #expect(sender.send(Self.item(), to: peer, state: &state, now: 0, atOnce: false)
                == .sent(wakeAt: nil, datagram: nil, scheduleFlush: true))
        #expect(sender.send(Self.item(), to: peer, state: &state, now: 0, atOnce: true)
                == .sent(wakeAt: nil, datagram: nil, scheduleFlush: false), "queued behind the turn's earlier item")
        #expect(sender.send(Self.item(), to: peer, state: &state, now: 0, atOnce: true, maximumDatagram: 10) == .fallBack,
                "too large for a datagram")
        #expect(sender.waits.count == 3)
        #expect(sender.send(Self.item(), to: peer, state: &state, now: 1_000 * Self.ms, atOnce: true) == .fallBack,
                "the presence lease ran out")
    }

    @Test func packingKeepsOrderAndFitsTheDatagram() {
        let messages: [[UInt8]] = (0..<5).map { [0x01] + Array(repeating: UInt8($0), count: 40) }
        let groups = RealtimeSender.pack(messages, maximumDatagram: DeliveryMessage.realtimeBatchHeaderSize + 100)
        #expect(groups.map(\.range) == [0..<2, 2..<4, 4..<5])
        #expect(groups[0].bytes.first == 0x0D && groups[0].bytes.count == DeliveryMessage.realtimeBatchHeaderSize + 80)
        #expect(groups[2].bytes == messages[4], "a run of one is the plain message")
    }
}
