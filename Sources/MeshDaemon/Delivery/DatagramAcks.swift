import Foundation
import MeshCore

/// The acks of realtime items received by datagram, coalesced: queued per peer as items are
/// handled and sent once the loop has handled what it read in this turn (at most
/// `maximumPerMessage` event IDs per ack datagram, 0x0C), peers in the order their first ack
/// was queued (`PeerBacklog`). It also tracks a burst of received
/// datagrams (one socket read) and the sinks it emitted to, flushed when the burst ends. The
/// storage of the backlog and of the burst's sink list is kept from turn to turn: nothing is
/// allocated per datagram once they have grown.
struct DatagramAcks {
    /// Event IDs one ack datagram carries at most.
    static let maximumPerMessage = 64

    private var backlog = PeerBacklog<UUID>()
    /// An empty backlog whose storage the next flush reuses.
    private var spare = PeerBacklog<UUID>()
    /// A flush is due (at the burst's end, or in a loop task already scheduled).
    private(set) var flushScheduled = false
    /// A burst of received datagrams is being handled.
    private(set) var inBurst = false
    private var burstSinks: [any DeliveryEventSink] = []
    private var spareBurstSinks: [any DeliveryEventSink] = []

    /// Queues the ack of `eventID` to `peer`. True when the caller must schedule a flush in a
    /// loop task (the first ack queued outside a burst; inside one, its end flushes).
    mutating func queue(_ eventID: UUID, to peer: DeviceID) -> Bool {
        backlog.append(eventID, for: peer)
        guard !flushScheduled else { return false }
        flushScheduled = true
        return !inBurst
    }

    /// A received datagram's items are being handled.
    mutating func burstStarted() {
        inBurst = true
    }

    /// `sink` got an event now: flushed at the burst's end (a burst reaches few sinks, one per
    /// attached app of the feature: a short scan).
    mutating func emitted(to sink: any DeliveryEventSink) {
        if inBurst, !burstSinks.contains(where: { $0 === sink }) { burstSinks.append(sink) }
    }

    /// The burst ended: the sinks to flush (nil when no burst ran), given back with
    /// `recycle(burstSinks:)`; then `flushScheduled` tells whether acks wait.
    mutating func endBurst() -> [any DeliveryEventSink]? {
        guard inBurst else { return nil }
        inBurst = false
        var sinks = spareBurstSinks
        swap(&sinks, &burstSinks)
        return sinks
    }

    mutating func recycle(burstSinks sinks: inout [any DeliveryEventSink]) {
        sinks.removeAll(keepingCapacity: true)
        swap(&sinks, &spareBurstSinks)
    }

    /// Takes the queued acks (nil when none), per peer; give the storage back with `recycle`.
    mutating func take() -> PeerBacklog<UUID>? {
        flushScheduled = false
        guard !backlog.isEmpty else { return nil }
        var taken = spare
        swap(&taken, &backlog)
        return taken
    }

    mutating func recycle(_ taken: inout PeerBacklog<UUID>) {
        taken.removeAll()
        swap(&taken, &spare)
    }

    /// The ack messages for `eventIDs`, in order: one per `maximumPerMessage` IDs.
    static func messages(_ eventIDs: [UUID], _ body: (DeliveryMessage) -> Void) {
        var start = 0
        while start < eventIDs.count {
            let chunk = Array(eventIDs[start..<min(start + maximumPerMessage, eventIDs.count)])
            start += chunk.count
            body(chunk.count == 1 ? .realtimeAck(eventID: chunk[0]) : .realtimeAcks(chunk))
        }
    }
}
