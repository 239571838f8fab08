import Foundation
import MeshCrypto
import MeshCore

/// Inbound realtime traffic handled at once: realtime items and their acks arriving by datagram
/// are handled as the node reads them (`receive`, on the shared loop), without a queue or a
/// task in between, while nothing waits in the inbound queue. Their acks are coalesced
/// (`DatagramAcks`).
extension DeliveryRouter {
    /// Handles a datagram-path realtime item or ack at once; false for anything else (it is
    /// queued, see `receive`).
    func handleImmediately(_ inbound: InboundChannelMessage) -> Bool {
        guard inbound.path == .datagram, let tag = inbound.bytes.first, tag == 0x01 || tag == 0x02 || tag == 0x0C || tag == 0x0D else {
            return false
        }
        guard let message = decodeInbound(inbound) else { return true }
        datagramAcks.burstStarted()
        return handleRealtime(message, from: inbound.peer, path: .datagram)
    }

    /// The datagrams of one socket read have been handled: the events they produced are
    /// written to their apps now, then their acks leave — before NIO turns to its other
    /// channels and its task queue, where both would otherwise wait (the loop tasks each
    /// scheduled then find nothing to do).
    func datagramBurstEnded() {
        guard var sinks = datagramAcks.endBurst() else { return }
        for sink in sinks { sink.flushNow() }
        datagramAcks.recycle(burstSinks: &sinks)
        if datagramAcks.flushScheduled { flushAcksNow() }
    }

    /// Queues the ack of a received realtime item, without suspending: datagram acks go out
    /// once the loop has handled what it read in this turn; a stream-path ack is written at
    /// once, in order.
    func queueAckNow(_ eventID: UUID, to peer: DeviceID, path: PingPath) {
        guard path == .datagram else { return transmitNow(.realtimeAck(eventID: eventID), to: peer, path: path) }
        // Inside a datagram burst its end sends them (`datagramBurstEnded`): no loop task.
        guard datagramAcks.queue(eventID, to: peer) else { return }
        let router = self
        loop.execute { router.onLoop { $0.flushAcksNow() } }
    }

    /// Sends the coalesced datagram acks.
    func flushAcksNow() {
        guard var backlog = datagramAcks.take() else { return }
        for (peer, eventIDs) in backlog {
            DatagramAcks.messages(eventIDs) { message in
                counters.realtimeAckDatagrams &+= 1
                transmitNow(message, to: peer, path: .datagram)
            }
        }
        datagramAcks.recycle(&backlog)
        channels.flushDatagrams()
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
