import Foundation
import MeshCrypto
import MeshCore

/// Inbound realtime traffic handled at once: realtime items and their acks arriving by datagram
/// are handled as the node reads them (`receive`, on the shared loop), without a queue or a
/// task in between, while nothing waits in the inbound queue.
extension DeliveryRouter {
    /// Handles a datagram-path realtime item or ack at once; false for anything else (it is
    /// queued, see `receive`).
    func handleImmediately(_ inbound: InboundChannelMessage) -> Bool {
        guard inbound.path == .datagram, let tag = inbound.bytes.first, tag == 0x01 || tag == 0x02 || tag == 0x0C || tag == 0x0D else {
            return false
        }
        guard let message = decodeInbound(inbound) else { return true }
        inDatagramBurst = true
        return handleRealtime(message, from: inbound.peer, path: .datagram)
    }

    /// The datagrams of one socket read have been handled: the events they produced are
    /// written to their apps now, then their acks leave — before NIO turns to its other
    /// channels and its task queue, where both would otherwise wait (the loop tasks each
    /// scheduled then find nothing to do).
    func datagramBurstEnded() {
        guard inDatagramBurst else { return }
        inDatagramBurst = false
        for sink in burstSinks { sink.flushNow() }
        burstSinks.removeAll(keepingCapacity: true)
        if ackFlushScheduled { flushAcksNow() }
    }

    /// Queues the ack of a received realtime item, without suspending: datagram acks are
    /// coalesced (0x0C) and go out once the loop has handled what it read in this turn; a
    /// stream-path ack is written at once, in order.
    func queueAckNow(_ eventID: UUID, to peer: DeviceID, path: PingPath) {
        guard path == .datagram else {
            transmitNow(.realtimeAck(eventID: eventID), to: peer, path: path)
            return
        }
        ackBacklog[peer, default: []].append(eventID)
        guard !ackFlushScheduled else { return }
        ackFlushScheduled = true
        // Inside a datagram burst its end sends them (`datagramBurstEnded`): no loop task.
        guard !inDatagramBurst else { return }
        let router = self
        loop.execute { router.onLoop { $0.flushAcksNow() } }
    }

    /// Sends the coalesced datagram acks (at most 64 event IDs per datagram).
    func flushAcksNow() {
        ackFlushScheduled = false
        guard !ackBacklog.isEmpty else { return }
        // The backlog's storage is kept for the next turn (swapped with the spare, emptied).
        var backlog = spareAckBacklog
        swap(&backlog, &ackBacklog)
        defer {
            backlog.removeAll(keepingCapacity: true)
            spareAckBacklog = backlog
        }
        for (peer, eventIDs) in backlog {
            var start = 0
            while start < eventIDs.count {
                let chunk = Array(eventIDs[start..<min(start + 64, eventIDs.count)])
                start += chunk.count
                counters.realtimeAckDatagrams &+= 1
                transmitNow(chunk.count == 1 ? .realtimeAck(eventID: chunk[0]) : .realtimeAcks(chunk), to: peer, path: .datagram)
            }
        }
    }

    /// Sends `message` without waiting for the write: the node shares this loop.
    func transmitNow(_ message: DeliveryMessage, to peer: DeviceID, path: PingPath) {
        let bytes = message.encode()
        switch path {
        case .datagram: _ = try? channels.sendDatagram(bytes, to: peer)
        case .stream: _ = try? channels.sendStream(bytes, to: peer, connection: nil)
        }
    }
}
