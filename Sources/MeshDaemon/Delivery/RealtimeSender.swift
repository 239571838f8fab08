import Foundation
import MeshCrypto

/// The realtime sender's decisions: each copy's ack deadline, which copies fall back to the
/// reliable path because their ack is late, when the ack watchdog wakes next, and how the
/// items of one loop turn are packed into datagrams.
///
/// A value the router's `DeliverySender` holds: its mutating methods take what happened and the
/// monotonic time (ns) and return what the sender does (arm the watchdog at an instant, fall a
/// copy back, send datagrams). The sender does the I/O (`DeliverySender`, `+RealtimeBatch`).
///
/// A copy's ack deadline is max(4 × RTT, the delays the peer's acks took, the peer's adaptive
/// floor), at least `minimumAckDeadline` and at most `maximumAckDeadline` (the floor and the
/// delays are kept per peer, `DeliveryPeerState.ackWaitFloor`). Copies are kept per (peer,
/// eventID): a send to several peers waits for, and falls back to, each peer separately.
struct RealtimeSender: Sendable {
    /// Encoded 0x01 messages queued in one loop turn per peer, in send order (peers in the
    /// order the turn first queued to them: the flush does not follow a hash order).
    typealias Backlog = PeerBacklog<(eventID: UUID, message: [UInt8])>

    let minimumAckDeadline: Double
    let maximumAckDeadline: Double
    /// The copies waiting for their ack.
    private(set) var waits = RealtimeAckWaits()
    /// Their deadlines, earliest first (what `expire` walks).
    private var timeline = RealtimeAckTimeline()
    /// The watchdog's next wake-up (monotonic ns); `.max` while none is armed.
    private(set) var watchdogAt = UInt64.max
    private var backlog = Backlog()
    /// An empty backlog whose storage the next turn reuses (no peer list allocated per turn).
    private var spareBacklog = Backlog()
    /// The end-of-turn flush is scheduled.
    private(set) var flushScheduled = false

    init(minimumAckDeadline: Double, maximumAckDeadline: Double) {
        self.minimumAckDeadline = minimumAckDeadline
        self.maximumAckDeadline = maximumAckDeadline
    }

    // MARK: - Ack waits

    /// `item` went to `peer` at `sentAt`: its copy waits for the ack until its deadline (see the
    /// type's summary), replacing that peer's earlier wait for the same event. Returns the
    /// instant to arm the watchdog at when it must wake earlier than armed (another peer's
    /// shorter deadline, a shrunk floor); nil otherwise, so at a steady deadline one wake-up
    /// serves many items.
    mutating func expectAck(_ item: DeliveryItem, from peer: DeviceID, floor: Double, roundTripNanoseconds: Int64?,
                            sentAt: UInt64) -> UInt64? {
        let rtt = Double(roundTripNanoseconds ?? 0) / 1e9
        let seconds = min(maximumAckDeadline, max(minimumAckDeadline, floor, 4 * rtt))
        let deadline = sentAt &+ UInt64(seconds * 1e9)
        waits.insert(item, for: peer, deadline: deadline, sentAt: sentAt)
        timeline.insert(item.eventID, deadline: deadline)
        guard deadline < watchdogAt else { return nil }
        watchdogAt = deadline
        return deadline
    }

    /// `peer` acked `eventID` at `now`: its copy stops waiting; returns the seconds since its
    /// send (a sample for the peer's ack delay), nil when no copy waited for that peer (another
    /// peer's copy, a duplicate ack, or one after the fallback).
    mutating func acked(_ eventID: UUID, from peer: DeviceID, at now: UInt64) -> Double? {
        guard let wait = waits.remove(eventID, for: peer) else { return nil }
        return Double(now &- min(now, wait.sentAt)) / 1e9
    }

    /// As `acked(_:from:at:)`, and the delay is a sample for the peer's ack deadline: its floor
    /// shrinks (`DeliveryPeerState.ackArrivedInTime`, in place in `peers`). True when a copy
    /// waited for that peer.
    mutating func acked(_ eventID: UUID, from peer: DeviceID, at now: UInt64,
                        peers: inout [DeviceID: DeliveryPeerState]) -> Bool {
        guard let delay = acked(eventID, from: peer, at: now) else { return false }
        if let slot = peers.index(forKey: peer) {
            peers.values[slot].ackArrivedInTime(minimumDeadline: minimumAckDeadline, delay: delay)
        }
        return true
    }

    /// `item` went to `peer` at `sentAt` on another path than `send` (a drained pre-activation
    /// item on the stream): its copy waits for the ack from the peer's floor and RTT in `peers`
    /// (the minimum deadline for a peer not there). Returns the watchdog instant as `expectAck`.
    mutating func expectAck(_ item: DeliveryItem, from peer: DeviceID, peers: [DeviceID: DeliveryPeerState],
                            sentAt: UInt64) -> UInt64? {
        expectAck(item, from: peer, floor: peers[peer]?.ackWaitFloor ?? minimumAckDeadline,
                  roundTripNanoseconds: peers[peer]?.roundTripNanoseconds, sentAt: sentAt)
    }

    /// The copy of `eventID` for `peer` stops waiting (its datagram did not go out, its stream
    /// write failed): returned when it waited, to fall back now.
    mutating func stopWaiting(_ eventID: UUID, for peer: DeviceID) -> RealtimeAckWaits.Wait? {
        waits.remove(eventID, for: peer)
    }

    /// Every copy waiting for `peer` stops waiting (channel down, unpair); other peers' copies
    /// of the same events keep waiting.
    mutating func stopWaiting(for peer: DeviceID) -> [RealtimeAckWaits.Wait] {
        waits.removeAll(for: peer)
    }

    /// The watchdog woke at `now`: returns the copies whose deadline passed, earliest first,
    /// whatever their peer (each falls back to its own peer's outbox), and the instant to wake
    /// next (the earliest deadline still waiting; nil when nothing waits: the next
    /// `expectAck` arms it again).
    mutating func expire(now: UInt64) -> (expired: [RealtimeAckWaits.Wait], wakeAt: UInt64?) {
        watchdogAt = .max
        var expired: [RealtimeAckWaits.Wait] = []
        while let next = timeline.earliest {
            if next.deadline > now {
                guard waits.isWaiting(next.eventID, deadline: next.deadline) else {
                    // Acked, fallen back on a channel loss or an unpair, or waiting again with another deadline.
                    timeline.removeEarliest()
                    continue
                }
                watchdogAt = next.deadline
                return (expired, next.deadline)
            }
            timeline.removeEarliest()
            if let waiting = waits.removeExpired(next.eventID, deadline: next.deadline) { expired.append(waiting) }
        }
        timeline.removeAll()
        return (expired, nil)
    }

    /// As `expire(now:)`, and each late copy's peer waits longer from now on: its floor grows
    /// (`DeliveryPeerState.ackTimedOut`, in place in `peers`) once per late copy.
    mutating func expire(now: UInt64, peers: inout [DeviceID: DeliveryPeerState])
        -> (expired: [RealtimeAckWaits.Wait], wakeAt: UInt64?) {
        let result = expire(now: now)
        for waiting in result.expired {
            guard let slot = peers.index(forKey: waiting.peer) else { continue }
            peers.values[slot].ackTimedOut(minimumDeadline: minimumAckDeadline, maximumDeadline: maximumAckDeadline)
        }
        return result
    }

    /// What a realtime send to one peer does.
    enum SendStep: Equatable {
        /// Buffered before the peer's first activation (`droppedOldest`: the buffer was full).
        case pending(droppedOldest: Bool)
        /// Not reachable now, or too large for a datagram: to the outbox.
        case fallBack
        /// Its copy waits for the ack (arm the watchdog at `wakeAt` when set); `datagram` leaves
        /// now, or it was queued for the turn's end (`scheduleFlush`: the caller schedules it).
        case sent(wakeAt: UInt64?, datagram: [UInt8]?, scheduleFlush: Bool)
    }

    /// Routes `item` to `peer` whose state is `state` (in place: no copy per message). A
    /// datagram leaves at the end of the loop turn, packed with the turn's other items for the
    /// peer; with `atOnce`, and none of those queued before it, at once.
    mutating func send(_ item: DeliveryItem, to peer: DeviceID, state: inout DeliveryPeerState, now: UInt64,
                       atOnce: Bool, maximumDatagram: Int = MeshNode.maximumDatagramMessage) -> SendStep {
        let floor: Double, rtt: Int64?
        switch state.routeRealtime(item, now: now) {
        case .pending(let droppedOldest): return .pending(droppedOldest: droppedOldest)
        case .fallBack: return .fallBack
        case .datagram(let ackWaitFloor, let roundTripNanoseconds): (floor, rtt) = (ackWaitFloor, roundTripNanoseconds)
        }
        let message = DeliveryMessage.realtime(item).encode()
        guard message.count <= maximumDatagram else { return .fallBack }
        let wakeAt = expectAck(item, from: peer, floor: floor, roundTripNanoseconds: rtt, sentAt: now)
        if atOnce, nothingQueued(for: peer) { return .sent(wakeAt: wakeAt, datagram: message, scheduleFlush: false) }
        return .sent(wakeAt: wakeAt, datagram: nil, scheduleFlush: queue(item.eventID, message: message, to: peer))
    }

    // MARK: - Datagrams of one loop turn

    /// Nothing is queued for `peer` in this turn: a datagram to it may leave at once without
    /// overtaking one.
    func nothingQueued(for peer: DeviceID) -> Bool { backlog.isEmpty || !backlog.contains(peer) }

    /// Queues one encoded 0x01 message (its copy already waits for its ack) for the end of the
    /// turn; true when the caller must schedule the flush (`takeBacklog`).
    mutating func queue(_ eventID: UUID, message: [UInt8], to peer: DeviceID) -> Bool {
        backlog.append((eventID, message), for: peer)
        guard !flushScheduled else { return false }
        flushScheduled = true
        return true
    }

    /// The turn ends: what was queued (nil: nothing). Hand it back with `recycle` once sent,
    /// so the next turn reuses its storage.
    mutating func takeBacklog() -> Backlog? {
        flushScheduled = false
        guard !backlog.isEmpty else { return nil }
        var taken = Backlog()
        swap(&taken, &spareBacklog)
        swap(&taken, &backlog)
        return taken
    }

    /// Keeps a sent backlog's storage (emptied) for the next turn.
    mutating func recycle(_ sent: inout Backlog) {
        sent.removeAll()
        swap(&spareBacklog, &sent)
    }

    /// Splits encoded 0x01 messages into consecutive runs that fit one datagram of at most
    /// `maximumDatagram` bytes: a run of one is the message itself, a longer run one 0x0D batch
    /// (tag, u16 count, then each message without its tag).
    static func pack(_ messages: [[UInt8]], maximumDatagram: Int = MeshNode.maximumDatagramMessage)
        -> [(range: Range<Int>, bytes: [UInt8])] {
        var groups: [(range: Range<Int>, bytes: [UInt8])] = []
        var start = 0
        var size = DeliveryMessage.realtimeBatchHeaderSize
        func close(_ end: Int) {
            guard end > start else { return }
            if end - start == 1 {
                groups.append((start..<end, messages[start]))
            } else {
                var writer = WireWriter(capacity: size)
                writer.u8(0x0D)
                writer.u16(UInt16(truncatingIfNeeded: end - start))
                for message in messages[start..<end] { writer.raw(message[1...]) }
                groups.append((start..<end, writer.bytes))
            }
            start = end
            size = DeliveryMessage.realtimeBatchHeaderSize
        }
        for (index, message) in messages.enumerated() {
            let itemSize = message.count - 1
            if index > start, size + itemSize > maximumDatagram { close(index) }
            size += itemSize
        }
        close(messages.count)
        return groups
    }
}
