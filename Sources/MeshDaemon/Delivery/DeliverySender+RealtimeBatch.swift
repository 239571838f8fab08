import Foundation
import MeshCrypto

/// Realtime items leave in as few datagrams as fit: the items a loop turn produced for one
/// peer (a read burst on a local API connection, or several connections) are packed into
/// 0x0D batches of at most `MeshNode.maximumDatagramMessage` bytes when the turn ends. A turn
/// with one item for a peer sends a plain 0x01 message, as before, so a single send is not
/// delayed and a peer running a build without batches still gets single items.
extension DeliverySender {
    /// Flushes the realtime items queued in this loop turn when it ends.
    func scheduleRealtimeFlush(_ router: isolated DeliveryRouter) {
        router.loop.execute { [router] in router.onLoop { $0.sender.flushRealtimeNow($0) } }
    }

    /// Sends what `RealtimeSender.send` queued: per peer, in queue order, packed greedily
    /// (`RealtimeSender.pack`). Also called by the local API when a read burst is done (the
    /// scheduled call then finds nothing or only what came later).
    func flushRealtimeNow(_ router: isolated DeliveryRouter) {
        guard var backlog = realtime.takeBacklog() else { return }
        for (peer, messages) in backlog {
            if messages.count == 1 {
                sendRealtimeDatagram(router, messages[0].message, items: 1, to: peer, batched: true,
                                     or: messages.lazy.map(\.eventID))
                continue
            }
            for group in RealtimeSender.pack(messages.map(\.message)) {
                sendRealtimeDatagram(router, group.bytes, items: group.range.count, to: peer, batched: true,
                                     or: messages[group.range].lazy.map(\.eventID))
            }
        }
        realtime.recycle(&backlog)
        router.channels.flushDatagrams()
    }

    /// One datagram of `items` realtime items (`batched`: it waits for the caller's
    /// `flushDatagrams()`); when it cannot go out, those of `eventIDs` still awaiting their ack
    /// fall back to the outbox at once (as a failed single send did).
    func sendRealtimeDatagram(_ router: isolated DeliveryRouter, _ bytes: [UInt8], items: Int, to peer: DeviceID,
                              batched: Bool, or eventIDs: some Sequence<UUID>) {
        do {
            // The node shares the router's loop (see `DeliveryRouter.unownedExecutor`): a direct call, no hop.
            try router.channels.sendDatagram(bytes, to: peer, batched: batched)
            router.counters.realtimeDatagrams &+= 1
            if items > 1 { router.counters.realtimeBatches &+= 1 }
        } catch {
            for eventID in eventIDs {
                if let waiting = realtime.stopWaiting(eventID, for: peer) { fallBack(router, waiting.item, to: peer) }
            }
        }
    }
}
