import Foundation
import MeshCrypto

/// Realtime items leave in as few datagrams as fit: the items a loop turn produced for one
/// peer (a read burst on a local API connection, or several connections) are packed into
/// 0x0D batches of at most `MeshNode.maximumDatagramMessage` bytes when the turn ends. A turn
/// with one item for a peer sends a plain 0x01 message, as before, so a single send is not
/// delayed and a peer running a build without batches still gets single items.
extension DeliveryRouter {
    /// Queues one encoded 0x01 message (its item already awaits its ack) for the end of the
    /// loop turn.
    func queueRealtimeNow(_ eventID: UUID, message: [UInt8], to peer: DeviceID) {
        realtimeBacklog[peer, default: []].append((eventID, message))
        guard !realtimeFlushScheduled else { return }
        realtimeFlushScheduled = true
        let router = self
        loop.execute { router.onLoop { $0.flushRealtimeNow() } }
    }

    /// Sends what `queueRealtimeNow` collected: per peer, in queue order, packed greedily.
    /// Also called by the local API when a read burst is done (the scheduled call then finds
    /// nothing or only what came later).
    func flushRealtimeNow() {
        realtimeFlushScheduled = false
        guard !realtimeBacklog.isEmpty else { return }
        // The backlog's storage is kept for the next turn (swapped with the spare, emptied).
        var backlog = spareRealtimeBacklog
        swap(&backlog, &realtimeBacklog)
        for (peer, messages) in backlog {
            if messages.count == 1 {
                sendRealtimeDatagram(messages[0].message, items: 1, to: peer, or: messages.lazy.map(\.eventID))
                continue
            }
            for group in Self.packRealtime(messages.map(\.message)) {
                sendRealtimeDatagram(group.bytes, items: group.range.count, to: peer, or: messages[group.range].lazy.map(\.eventID))
            }
        }
        backlog.removeAll(keepingCapacity: true)
        spareRealtimeBacklog = backlog
    }

    /// Splits encoded 0x01 messages into consecutive runs whose batch fits one datagram.
    static func packRealtime(_ messages: [[UInt8]]) -> [(range: Range<Int>, bytes: [UInt8])] {
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
            if index > start, size + itemSize > MeshNode.maximumDatagramMessage { close(index) }
            size += itemSize
        }
        close(messages.count)
        return groups
    }

    /// One datagram of `items` realtime items; when it cannot go out, those of `eventIDs` still
    /// awaiting their ack fall back to the outbox at once (as a failed single send did).
    func sendRealtimeDatagram(_ bytes: [UInt8], items: Int, to peer: DeviceID, or eventIDs: some Sequence<UUID>) {
        do {
            // The node shares the router's loop (see `unownedExecutor`): a direct call, no hop.
            try channels.sendDatagram(bytes, to: peer)
            counters.realtimeDatagrams &+= 1
            if items > 1 { counters.realtimeBatches &+= 1 }
        } catch {
            for eventID in eventIDs {
                if let waiting = awaitingAck.remove(eventID, for: peer) { fallBack(waiting.item, to: peer) }
            }
        }
    }
}
