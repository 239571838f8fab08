import Foundation
import MeshCrypto
import MeshLocalAPI

/// The synchronous path of inbound realtime traffic: realtime items and their acks arriving
/// by datagram are handled as the node reads them, on the shared loop, without a stream or a
/// task in between. Everything else goes through `inboundMessages` as before.
extension DeliveryRouter {
    /// Registers `handleImmediately` with the node (call once, from `run()`).
    func attachDirectInbound() {
        let router = self
        node.assumeIsolated { node in
            node.setDirectInbound { message in router.assumeIsolated { $0.handleImmediately(message) } }
        }
    }

    /// Detaches the synchronous consumer (the router stops).
    func detachDirectInbound() {
        node.assumeIsolated { $0.setDirectInbound(nil) }
    }

    /// One message taken from `inboundMessages` was handled (the direct path may resume once
    /// none is left, so a peer's messages keep their order).
    func inboundConsumed() {
        node.assumeIsolated { $0.inboundConsumed() }
    }

    /// Handles a datagram-path realtime item or ack at once; false for anything else (the
    /// node queues it on `inboundMessages`).
    func handleImmediately(_ inbound: InboundChannelMessage) -> Bool {
        guard inbound.path == .datagram, let tag = inbound.bytes.first, tag == 0x01 || tag == 0x02 || tag == 0x0C || tag == 0x0D else {
            return false
        }
        guard let message = decodeInbound(inbound) else { return true }
        return handleRealtime(message, from: inbound.peer, path: .datagram)
    }

    /// Queues the ack of a received realtime item, without suspending: datagram acks are
    /// coalesced (0x0C) and go out once the loop has handled what it read in this turn, or
    /// later while a stream keeps arriving (`flushAcksWhenDue`); a stream-path ack is written
    /// at once, in order.
    func queueAckNow(_ eventID: UUID, to peer: DeviceID, path: PingPath) {
        guard path == .datagram else {
            transmitNow(.realtimeAck(eventID: eventID), to: peer, path: path)
            return
        }
        ackBacklog[peer, default: []].append(eventID)
        guard !ackFlushScheduled else { return }
        ackFlushScheduled = true
        let router = self
        loop.execute { router.assumeIsolated { $0.flushAcksWhenDue() } }
    }

    /// The end of a loop turn that queued acks. They go now when the last acks went at least
    /// `realtimeAckDelay` ago — so the first item after a quiet spell is acked at once — or
    /// when 64 wait for one peer (a full 0x0C). Otherwise they wait for the first turn past
    /// that instant; a timer at twice the delay sends them when no such turn comes. A steady
    /// stream is so acked with one datagram per interval, not one per datagram received: the
    /// sender's daemon wakes that much less, and the receiver writes that much less. The wait
    /// (≤ 2 ms by default) is far inside the sender's ack deadline (≥ 20 ms).
    func flushAcksWhenDue() {
        ackFlushScheduled = false
        guard !ackBacklog.isEmpty else { return }
        let interval = UInt64(max(0, options.realtimeAckDelay) * 1e9), now = now()
        if interval == 0 || acksSentAt == 0 || now &- acksSentAt >= interval || ackBacklog.values.contains(where: { $0.count >= 64 }) {
            flushAcksNow(at: now)
            return
        }
        guard ackDelayTimer == nil else { return }
        let router = self, wait = Int64(clamping: acksSentAt &+ 2 * interval &- now)
        ackDelayTimer = loop.scheduleTask(in: .nanoseconds(wait)) {
            router.assumeIsolated { router in
                router.ackDelayTimer = nil
                router.flushAcksNow()
            }
        }
    }

    /// Sends the coalesced datagram acks (at most 64 event IDs per datagram).
    func flushAcksNow(at now: UInt64? = nil) {
        ackDelayTimer?.cancel()
        ackDelayTimer = nil
        guard !ackBacklog.isEmpty else { return }
        acksSentAt = now ?? self.now()
        let backlog = ackBacklog
        ackBacklog = [:]
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
        node.assumeIsolated { node in
            switch path {
            case .datagram: _ = try? node.sendApplicationDatagram(bytes, to: peer)
            case .stream: _ = node.sendStream(.application(bytes), to: peer)
            }
        }
    }
}
