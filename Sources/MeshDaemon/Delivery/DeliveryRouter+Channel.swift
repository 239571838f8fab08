import Foundation
import MeshCrypto
import MeshCore
import SessionMesh

/// Channel events: activation drains the pending buffer and resends what peers need.
extension DeliveryRouter {
    /// The channel to `peer` came up: what `ActivationPlan` lists, in its order.
    func activated(_ peer: DeviceID) async {
        ensurePeer(peer)
        guard let plan = peerStates[peer]?.activate(now: now(), retryInitial: options.retryInitial) else { return }
        counters.pendingDrained &+= UInt64(plan.drained.count)
        emitReachability(plan.reachability, of: peer)
        refreshEstimate(peer)
        transmit(.presence(features: attachments.announcedFeatures), to: peer, path: .stream)
        sender.sendDrained(self, plan.drained, to: peer)
        await directory.resendState(self, to: peer)
        // In a task of its own: the pump waits for each batch's write, and a peer that does not
        // read must not hold up the channel events of the others.
        sender.schedulePump(self, peer)
    }

    func deactivated(_ peer: DeviceID) {
        guard let changes = peerStates[peer]?.deactivate(now: now()) else { return }
        emitReachability(changes, of: peer)
        sender.fallBackWaiting(self, for: peer)
    }

    func unpaired(_ peer: DeviceID) async {
        peerStates[peer] = nil
        _ = sender.realtime.stopWaiting(for: peer)
        let store = self.store, key = peer.description
        do {
            let summary = try await worker.run { try store.peers.drop(key) }
            logger.info("delivery data of unpaired device dropped",
                        metadata: ["peer.id": "\(peer.short)", "outbox": "\(summary.outboxItems)", "inbox": "\(summary.inboxItems)"])
        } catch {
            counters.storeErrors &+= 1
            logger.error("could not drop the delivery data of an unpaired device", metadata: ["error": "\(error)"])
        }
    }

    /// Queues already-encoded delivery message bytes on the stream without waiting for the
    /// write (as `transmit`); false when the channel refused them.
    func transmitRaw(_ bytes: [UInt8], to peer: DeviceID) -> Bool {
        (try? channels.sendStream(bytes, to: peer, connection: nil)) != nil
    }

    /// The node's latest round trip and clock offset of `peer`.
    func refreshEstimate(_ peer: DeviceID) {
        let estimate = channels.linkEstimate(of: peer)
        peerStates[peer]?.roundTripNanoseconds = estimate.roundTripNanoseconds
        peerStates[peer]?.offsetNanoseconds = estimate.offsetNanoseconds
    }
}
