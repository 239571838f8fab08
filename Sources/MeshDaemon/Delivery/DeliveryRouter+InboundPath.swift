import MeshCrypto
import NIOCore

/// The one inbound path: the channels hand every message and channel event to `receive` and
/// `channelEvent`, on the loop, in arrival order.
///
/// Realtime datagram traffic is handled at once while nothing waits before it; everything else
/// joins a queue that `consumeInbound` works through in order (a message's handling may wait for
/// the store, and the next one waits for inbox room). Channel events have a queue of their own
/// (`consumeChannelEvents`), so an activation writing to a peer that does not read never holds
/// up the messages of every other peer. The channels count a queued message against their
/// bound until `inboundConsumed` (their stream readers pause when it is full).
extension DeliveryRouter: DeliveryInbound {
    package nonisolated func receive(_ message: InboundChannelMessage) -> Bool {
        onLoop { $0.receiveOnLoop(message) }
    }

    package nonisolated func channelEvent(_ event: PeerChannelEvent) {
        onLoop { router in
            router.pendingChannelEvents.append(event)
            router.resumeInboundConsumers()
        }
    }

    package nonisolated func inboundBurstEnded() {
        onLoop { $0.datagramBurstEnded() }
    }

    func receiveOnLoop(_ message: InboundChannelMessage) -> Bool {
        if inboundUnfinished == 0, handleImmediately(message) { return true }
        inboundUnfinished += 1
        pendingInbound.append(message)
        resumeInboundConsumers()
        return false
    }

    /// Resumes the consumers waiting for a message or an event.
    func resumeInboundConsumers() {
        if let waiter = inboundWaiter, !pendingInbound.isEmpty || stoppingInbound {
            inboundWaiter = nil
            waiter.resume()
        }
        if let waiter = channelEventWaiter, !pendingChannelEvents.isEmpty || stoppingInbound {
            channelEventWaiter = nil
            waiter.resume()
        }
    }

    /// Handles queued messages in order until the router stops.
    func consumeInbound() async {
        while !stoppingInbound {
            guard let message = pendingInbound.popFirst() else {
                await withCheckedContinuation { inboundWaiter = $0 }
                continue
            }
            await handle(message)
            // Counted as queued until consumed: while the inbox pipeline is full, the node's
            // stream readers pause, and TCP slows the senders down.
            await waitForInboxRoom()
            inboundUnfinished -= 1
            channels.inboundConsumed(bytes: message.bytes.count)
        }
    }

    /// Handles channel events in order until the router stops.
    func consumeChannelEvents() async {
        while !stoppingInbound {
            guard let event = pendingChannelEvents.popFirst() else {
                await withCheckedContinuation { channelEventWaiter = $0 }
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

    /// The router stops: the channels hold what arrives from now on, and what a datagram
    /// burst left is written out.
    func detachInbound() {
        channels.setInbound(nil)
        datagramBurstEnded()
    }
}
