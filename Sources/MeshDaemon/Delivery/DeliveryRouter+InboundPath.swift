import MeshCore
import MeshCrypto
import NIOCore

/// The one inbound path: the channels hand every message and channel event to `receive` and
/// `channelEvent`, on the loop, in arrival order; `InboundConsumer` handles them.
extension DeliveryRouter: DeliveryInbound {
    package nonisolated func receive(_ message: InboundChannelMessage) -> Bool {
        onLoop { $0.consumer.receive($0, message) }
    }

    package nonisolated func channelEvent(_ event: PeerChannelEvent) {
        onLoop { $0.consumer.channelEvent($0, event) }
    }

    package nonisolated func inboundBurstEnded() {
        onLoop { $0.consumer.datagramBurstEnded($0) }
    }

    /// The router stops: the consumers end, nothing waits for inbox room or a tick any more.
    func stopInboundWaits() {
        consumer.stop()
        ticker.stop()
        directory.deliveryWaits.finishAll()
    }

    /// The router stops: the channels hold what arrives from now on, and what a datagram
    /// burst left is written out.
    func detachInbound() {
        channels.setInbound(nil)
        consumer.datagramBurstEnded(self)
    }

    /// A warning about something a peer sent, at most once per 10 s (with how many were held back).
    func warnPeerFault(_ message: String, peer: DeviceID) {
        guard let suppressed = peerFaultWarning.admit(now: now()) else { return }
        logger.warning("\(message)", metadata: ["peer.id": "\(peer.short)", "suppressed": "\(suppressed)"])
    }

    /// From the tick: one line for each kind of warning held back since it was last written
    /// (so the last burst of a fault is reported too, not only when it happens again).
    func summariseHeldWarnings() {
        let now = now()
        if let held = peerFaultWarning.summary(now: now) {
            logger.warning("more refused messages from peers (warnings held back)", metadata: ["suppressed": "\(held)"])
        }
        consumer.summariseHeldWarnings(now: now, logger: logger)
        if let held = storeErrorWarning.summary(now: now) {
            logger.error("more store errors (held back)", metadata: ["suppressed": "\(held)"])
        }
    }
}

/// The relay mailbox's boxes that opened, handed to the courier on the loop.
extension DeliveryRouter: DeliveryMailboxInbound {
    package nonisolated func mailboxReceived(_ plaintext: [UInt8], kind: MailboxSeal.Kind, from peer: DeviceID) {
        onLoop { $0.courier.received($0, plaintext, kind: kind, from: peer) }
    }
}
