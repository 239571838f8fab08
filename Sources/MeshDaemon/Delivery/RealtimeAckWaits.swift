import Foundation
import MeshCrypto

/// The realtime copies waiting for their ack, one per (peer, eventID): a send to several peers
/// waits for each peer's ack separately, and each copy falls back to its own peer's outbox.
///
/// Keyed by event ID alone, with the copy for the first peer inline and copies for further
/// peers in a small array beside it: the one-peer case — the hot path — costs one UUID hash per
/// insert, ack and expiry, as a plain `[UUID: entry]` did, and no allocation beyond the
/// dictionary's (an empty array allocates nothing). Hashing a (DeviceID, UUID) key would also
/// hash the peer's 30 bytes for every message. A send to n peers adds one array of n − 1 copies.
struct RealtimeAckWaits: Sendable {
    /// One copy waiting for `peer`'s ack until the monotonic instant `deadline` (ns), sent at
    /// `sentAt` (ns; the ack's delay is a sample for the peer's ack deadline).
    struct Wait: Sendable {
        var peer: DeviceID
        var item: DeliveryItem
        var deadline: UInt64
        var sentAt: UInt64 = 0
        /// When it started waiting, among all copies (a counter): `removeAll(for:)` returns
        /// copies in this order.
        var order: UInt64 = 0
    }

    /// The copies of one event: `first` always holds one; `others` those for further peers.
    private struct Copies: Sendable {
        var first: Wait
        var others: [Wait] = []

        /// Adds `wait`, or replaces the copy already waiting for its peer.
        mutating func put(_ wait: Wait) {
            if first.peer == wait.peer {
                first = wait
            } else if let index = others.firstIndex(where: { $0.peer == wait.peer }) {
                others[index] = wait
            } else {
                others.append(wait)
            }
        }

        /// Removes and returns the first copy matching `matches`; `emptied` when none is left.
        mutating func take(where matches: (Wait) -> Bool) -> (wait: Wait?, emptied: Bool) {
            if matches(first) {
                let taken = first
                guard !others.isEmpty else { return (taken, true) }
                first = others.removeFirst()
                return (taken, false)
            }
            guard let index = others.firstIndex(where: matches) else { return (nil, false) }
            return (others.remove(at: index), false)
        }
    }

    private var byEvent: [UUID: Copies] = [:]
    /// Copies registered so far (the next `Wait.order`).
    private var registered: UInt64 = 0

    /// No copy waits.
    var isEmpty: Bool { byEvent.isEmpty }

    /// Copies waiting, over all peers (walks every event: for status output and tests).
    var count: Int { byEvent.values.reduce(0) { $0 + 1 + $1.others.count } }

    /// Registers `item` as waiting for `peer`'s ack until `deadline`, replacing that peer's
    /// earlier wait for the same event (other peers' copies are kept).
    mutating func insert(_ item: DeliveryItem, for peer: DeviceID, deadline: UInt64, sentAt: UInt64 = 0) {
        registered &+= 1
        let wait = Wait(peer: peer, item: item, deadline: deadline, sentAt: sentAt, order: registered)
        // One lookup: a new event gets `wait` as its default, which `put` then finds in place.
        byEvent[item.eventID, default: Copies(first: wait)].put(wait)
    }

    /// Removes and returns the copy of `eventID` waiting for `peer` (nil: none waits, e.g. the
    /// ack of another peer's copy, a duplicate ack, or one that came after the fallback).
    mutating func remove(_ eventID: UUID, for peer: DeviceID) -> Wait? {
        take(eventID) { $0.peer == peer }
    }

    /// Removes and returns a copy of `eventID` whose deadline is exactly `deadline`: the copy a
    /// `RealtimeAckTimeline` entry stands for. Several copies with the same deadline have as
    /// many timeline entries, so any of them may be taken for any of those entries.
    mutating func removeExpired(_ eventID: UUID, deadline: UInt64) -> Wait? {
        take(eventID) { $0.deadline == deadline }
    }

    /// Whether a copy of `eventID` waits with exactly `deadline` (a timeline entry still stands
    /// for a waiting copy, not for one acked, fallen back, or re-registered with another deadline).
    func isWaiting(_ eventID: UUID, deadline: UInt64) -> Bool {
        guard let copies = byEvent[eventID] else { return false }
        return copies.first.deadline == deadline || copies.others.contains { $0.deadline == deadline }
    }

    /// The deadline of the copy of `eventID` waiting for `peer`, if one waits.
    func deadline(of eventID: UUID, for peer: DeviceID) -> UInt64? {
        guard let copies = byEvent[eventID] else { return nil }
        if copies.first.peer == peer { return copies.first.deadline }
        return copies.others.first { $0.peer == peer }?.deadline
    }

    /// Whether any peer's copy of `eventID` still waits.
    func isWaiting(_ eventID: UUID) -> Bool { byEvent[eventID] != nil }

    /// Removes and returns every copy waiting for `peer` (channel down, unpair), in the order
    /// they started waiting (their fallback then queues them in send order, whatever the
    /// table's hash order); other peers' copies of the same events keep waiting.
    mutating func removeAll(for peer: DeviceID) -> [Wait] {
        // The events first, then the removals (no copy of the table made while walking it).
        let eventIDs = byEvent.compactMap { eventID, copies in
            copies.first.peer == peer || copies.others.contains { $0.peer == peer } ? eventID : nil
        }
        return eventIDs.compactMap { remove($0, for: peer) }.sorted { $0.order < $1.order }
    }

    private mutating func take(_ eventID: UUID, where matches: (Wait) -> Bool) -> Wait? {
        guard let index = byEvent.index(forKey: eventID) else { return nil }
        let (wait, emptied) = byEvent.values[index].take(where: matches)
        if emptied { byEvent.remove(at: index) }
        return wait
    }
}
