import MeshCore
import MeshCrypto
import NIOCore

/// The one inbound path: the channels hand every message and channel event to `receive` and
/// `channelEvent`, on the loop, in arrival order.
///
/// Realtime datagram traffic is handled at once while nothing waits before it; everything else
/// joins `InboundQueue`, which `consumeInbound` works through in order (a message's handling may
/// wait for the store, and the next one waits for inbox room). Channel events have a queue of
/// their own (`consumeChannelEvents`), so an activation writing to a peer that does not read
/// never holds up the messages of every other peer. The channels count a queued message against
/// their bound until `inboundConsumed` (their stream readers pause when it is full).
extension DeliveryRouter: DeliveryInbound {
    package nonisolated func receive(_ message: InboundChannelMessage) -> Bool {
        onLoop { $0.receiveOnLoop(message) }
    }

    package nonisolated func channelEvent(_ event: PeerChannelEvent) {
        onLoop { $0.channelEventOnLoop(event) }
    }

    package nonisolated func inboundBurstEnded() {
        onLoop { $0.datagramBurstEnded() }
    }

    func receiveOnLoop(_ message: InboundChannelMessage) -> Bool {
        // A device unpaired meanwhile: its message is not handled (it would register it again).
        if inbound.refuses(message.peer) { return true }
        if inbound.handlesAtOnce, handleImmediately(message) { return true }
        inbound.append(message)
        resumeInboundConsumers()
        return false
    }

    /// Queues a channel event; an unpairing drops the device's queued messages (what the
    /// channels count for them is released).
    func channelEventOnLoop(_ event: PeerChannelEvent) {
        for dropped in inbound.append(event) { channels.inboundConsumed(bytes: dropped.bytes.count) }
        resumeInboundConsumers()
    }

    /// Resumes the consumers waiting for a message or an event.
    func resumeInboundConsumers() {
        let (message, event) = inbound.wakeable()
        message?.resume()
        event?.resume()
    }

    /// Handles queued messages in order until the router stops.
    func consumeInbound() async {
        while !inbound.stopping {
            guard let message = inbound.nextMessage() else {
                await withCheckedContinuation { inbound.waitForMessage($0) }
                continue
            }
            await handle(message)
            // Counted as queued until consumed: while the inbox pipeline is full, the node's
            // stream readers pause, and TCP slows the senders down.
            await waitForInboxRoom()
            inbound.messageDone()
            channels.inboundConsumed(bytes: message.bytes.count)
        }
    }

    /// Handles channel events in order until the router stops.
    func consumeChannelEvents() async {
        while !inbound.stopping {
            guard let event = inbound.nextEvent() else {
                await withCheckedContinuation { inbound.waitForEvent($0) }
                continue
            }
            switch event {
            case .activated(let peer): await activated(peer)
            case .deactivated(let peer, _): deactivated(peer)
            case .paired(let peer): ensurePeer(peer)
            case .unpaired(let peer): await unpaired(peer)
            }
        }
    }

    /// Returns once the inbox pipeline has room (or the router stops).
    func waitForInboxRoom() async {
        guard !inbox.hasRoom, !inbound.stopping else { return }
        // Checked again where the waiter is stored: room may have been made meanwhile.
        await withCheckedContinuation { waiter in
            if inbox.hasRoom || inbound.stopping { waiter.resume() } else { inboxRoomWaiters.append(waiter) }
        }
    }

    /// Resumes the inbound consumer when the pipeline has room (or always, when `force`).
    func releaseInboxRoom(force: Bool = false) {
        guard !inboxRoomWaiters.isEmpty, force || inbox.hasRoom else { return }
        let waiters = inboxRoomWaiters
        inboxRoomWaiters = []
        for waiter in waiters { waiter.resume() }
    }

    /// The router stops: nothing waits for inbox room any more.
    func stopInboundWaits() {
        inbound.stop()
        releaseInboxRoom(force: true)
        resumeInboundConsumers()
        stopTicks()
        resumeDeliveryWaits()
    }

    /// The router stops: the channels hold what arrives from now on, and what a datagram
    /// burst left is written out.
    func detachInbound() {
        channels.setInbound(nil)
        datagramBurstEnded()
    }

    /// Counts a refused item (its header disagrees with its envelope) and warns (rate-limited).
    func refuseItem(from peer: DeviceID) {
        counters.itemsRefused &+= 1
        warnPeerFault("refused a received item whose header disagrees with its envelope", peer: peer)
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
        if let held = inboxFullWarning.summary(now: now) {
            logger.warning("inbox still full: more received items refused (warnings held back)", metadata: ["suppressed": "\(held)"])
        }
        if let held = inboxRefusedWarning.summary(now: now) {
            logger.warning("inbox still refusing received items (warnings held back)", metadata: ["suppressed": "\(held)"])
        }
        if let held = storeErrorWarning.summary(now: now) {
            logger.error("more store errors (held back)", metadata: ["suppressed": "\(held)"])
        }
    }
}
