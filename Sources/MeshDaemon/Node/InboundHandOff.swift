import MeshCrypto
import MeshCore

/// Hands what the channels received to the inbound handler (the delivery router): each
/// application message, handled at once or queued behind earlier ones, in order, and each
/// channel change. What `InboundGate` decides drops a message or holds messages and events
/// until a handler is installed; stream readers pause while the handler's queue is full.
///
/// Owns the handler and the gate; runs on the node's executor (the node calls it from its own
/// methods; the router through `NodeDeliveryChannels`, on the node's loop).
final class InboundHandOff {
    /// The consumer of inbound messages and channel events (the delivery router; see `setHandler`).
    var handler: (any DeliveryInbound)?
    /// What the handler queued, what waits for one, the stream readers paused for room.
    var gate = InboundGate()

    /// Hands an application message to the handler; counts it when the gate drops it.
    func deliver(_ node: isolated MeshNode, _ bytes: [UInt8], from peer: DeviceID, path: PingPath) {
        let message = InboundChannelMessage(peer: peer, path: path, bytes: bytes)
        switch gate.admit(message) {
        case .dropped: node.counters.inboundMessagesDropped += 1
        case .held: break
        case .handOut:
            if let handler, !handler.receive(message) { gate.handlerQueued(bytes: bytes.count) }
        }
    }

    /// Tells the handler about a channel change (held until one is installed).
    func channelEvent(_ event: PeerChannelEvent) {
        guard gate.admit(event) else { return }
        handler?.channelEvent(event)
    }

    /// Resumes the stream readers waiting for room (the handler went away, or the node stops).
    func releaseWaiters() {
        for resume in gate.releaseReaders() { resume() }
    }

    /// Installs (nil: removes) the handler; what was held meanwhile goes to the new one first,
    /// in arrival order.
    func setHandler(_ handler: (any DeliveryInbound)?) {
        self.handler = handler
        let held = gate.handlerChanged(installed: handler != nil)
        guard let handler else {
            releaseWaiters()
            return
        }
        for item in held {
            switch item {
            case .message(let message):
                if !handler.receive(message) { gate.handlerQueued(bytes: message.bytes.count) }
            case .event(let event): handler.channelEvent(event)
            }
        }
    }

    /// The datagrams of one socket read (up to 32) have all been handled: the handler writes
    /// out what they produced now, before the loop turns to other work.
    func burstEnded() { handler?.inboundBurstEnded() }

    /// The handler finished one message it had queued.
    func consumed(bytes: Int = 0) {
        for resume in gate.handlerConsumed(bytes: bytes) { resume() }
    }
}
