import Foundation
import Logging
import MeshCore
import MeshCrypto
import NIOCore

/// The receiving side of the router, from the channels to the inbox (docs/DELIVERY.md): every
/// peer message and channel event, handled in arrival order.
///
/// Realtime datagram traffic is handled at once while nothing waits before it, its acks
/// coalesced (`DatagramAcks`); everything else joins `InboundQueue`, which `consumeMessages`
/// works through in order (a message's handling may wait for the store, and the next one waits
/// for inbox room). Channel events have a queue of their own (`consumeChannelEvents`), so an
/// activation writing to a peer that does not read never holds up the messages of every other
/// peer. The channels count a queued message against their bound until `inboundConsumed`
/// (their stream readers pause when it is full). Items for the inbox pass `InboxPipeline`
/// (dedup, backlog) and are stored per peer by `consumeInboxWork`; `AppHandOut` then gives
/// them to the apps.
///
/// Owns the inbound queues, the inbox pipeline, the coalesced datagram acks, the consumer's
/// wait for inbox room and the inbox's rate-limited warnings. It lives on its router's
/// executor: every method that needs the router's services takes the router as its isolated
/// parameter (no hop, no suspension point of its own).
final class InboundConsumer {
    var inbound = InboundQueue()
    var inbox: InboxPipeline
    var datagramAcks = DatagramAcks()
    /// The message consumer waiting for the inbox pipeline to fall below its byte bound.
    private var roomWaiters: [CheckedContinuation<Void, Never>] = []
    /// Warnings a peer can cause over and over, each at most once per 10 s with a count of
    /// the ones held back.
    var inboxFullWarning = RateLimitedWarning()
    var inboxRefusedWarning = RateLimitedWarning()
    /// Wakes `consumeInboxWork` when the pipeline's backlog grew.
    let inboxSignal: AsyncStream<Void>
    let inboxSignalQueue: AsyncStream<Void>.Continuation

    init(options: DeliveryRouterOptions) {
        inbox = InboxPipeline(byteLimit: options.inboxBacklogBytes, dedupMemory: options.realtimeDedupMemory)
        (inboxSignal, inboxSignalQueue) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    /// A message from the channels: handled at once (true) or queued for `consumeMessages`.
    func receive(_ router: isolated DeliveryRouter, _ message: InboundChannelMessage) -> Bool {
        // A device unpaired meanwhile: its message is not handled (it would register it again).
        if inbound.refuses(message.peer) { return true }
        if inbound.handlesAtOnce, handleImmediately(router, message) { return true }
        inbound.append(message)
        resumeConsumers()
        return false
    }

    /// Queues a channel event; an unpairing drops the device's queued messages (what the
    /// channels count for them is released).
    func channelEvent(_ router: isolated DeliveryRouter, _ event: PeerChannelEvent) {
        for dropped in inbound.append(event) { router.channels.inboundConsumed(bytes: dropped.bytes.count) }
        resumeConsumers()
    }

    /// Resumes the consumers waiting for a message or an event.
    private func resumeConsumers() {
        let (message, event) = inbound.wakeable()
        message?.resume()
        event?.resume()
    }

    /// Handles queued messages in order until the router stops.
    func consumeMessages(_ router: isolated DeliveryRouter) async {
        while !inbound.stopping {
            guard let message = inbound.nextMessage() else {
                await withCheckedContinuation { inbound.waitForMessage($0) }
                continue
            }
            await handle(router, message)
            // Counted as queued until consumed: while the inbox pipeline is full, the node's
            // stream readers pause, and TCP slows the senders down.
            await waitForInboxRoom(router)
            inbound.messageDone()
            router.channels.inboundConsumed(bytes: message.bytes.count)
        }
    }

    /// Handles channel events in order until the router stops.
    func consumeChannelEvents(_ router: isolated DeliveryRouter) async {
        while !inbound.stopping {
            guard let event = inbound.nextEvent() else {
                await withCheckedContinuation { inbound.waitForEvent($0) }
                continue
            }
            switch event {
            case .activated(let peer): await router.activated(peer)
            case .deactivated(let peer, _): router.deactivated(peer)
            case .paired(let peer): router.ensurePeer(peer)
            case .unpaired(let peer): await router.unpaired(peer)
            case .memberAdded(let peer):
                router.ensurePeer(peer)
                router.emitReachability([ReachabilityChange(featureID: nil, reachable: false, reason: .deviceAdded)], of: peer)
            case .memberRemoved(let peer):
                router.emitReachability([ReachabilityChange(featureID: nil, reachable: false, reason: .deviceRemoved)], of: peer)
                // Its open sessions change hands before its rows are dropped.
                await router.directory.handOverPass(router, removed: peer)
                await router.unpaired(peer)
            }
        }
    }

    /// Returns once the inbox pipeline has room (or the router stops).
    private func waitForInboxRoom(_ router: isolated DeliveryRouter) async {
        guard !inbox.hasRoom, !inbound.stopping else { return }
        // Checked again where the waiter is stored: room may have been made meanwhile.
        await withCheckedContinuation { waiter in
            if inbox.hasRoom || inbound.stopping { waiter.resume() } else { roomWaiters.append(waiter) }
        }
    }

    /// Resumes the message consumer when the pipeline has room (or always, when `force`).
    func releaseInboxRoom(force: Bool = false) {
        guard !roomWaiters.isEmpty, force || inbox.hasRoom else { return }
        let waiters = roomWaiters
        roomWaiters = []
        for waiter in waiters { waiter.resume() }
    }

    /// The router stops: the consumers end, and nothing waits for inbox room any more.
    func stop() {
        inbound.stop()
        releaseInboxRoom(force: true)
        resumeConsumers()
    }

    /// From the tick: one line for each of the inbox's warnings held back since it was last
    /// written (so the last burst is reported too, not only when it happens again).
    func summariseHeldWarnings(now: UInt64, logger: Logger) {
        if let held = inboxFullWarning.summary(now: now) {
            logger.warning("inbox still full: more received items refused (warnings held back)", metadata: ["suppressed": "\(held)"])
        }
        if let held = inboxRefusedWarning.summary(now: now) {
            logger.warning("inbox still refusing received items (warnings held back)", metadata: ["suppressed": "\(held)"])
        }
    }

    // MARK: - Realtime datagrams handled at once

    /// Handles a datagram-path realtime item or ack at once, as the node reads it (on the
    /// shared loop, without a queue or a task in between); false for anything else (it is
    /// queued, see `receive`).
    private func handleImmediately(_ router: isolated DeliveryRouter, _ message: InboundChannelMessage) -> Bool {
        guard message.path == .datagram, let tag = message.bytes.first, tag == 0x01 || tag == 0x02 || tag == 0x0C || tag == 0x0D else {
            return false
        }
        guard let decoded = decode(router, message) else { return true }
        datagramAcks.burstStarted()
        return handleRealtime(router, decoded, from: message.peer, path: .datagram)
    }

    /// The datagrams of one socket read have been handled: the events they produced are
    /// written to their apps now, then their acks leave — before NIO turns to its other
    /// channels and its task queue, where both would otherwise wait (the loop tasks each
    /// scheduled then find nothing to do).
    func datagramBurstEnded(_ router: isolated DeliveryRouter) {
        guard var sinks = datagramAcks.endBurst() else { return }
        for sink in sinks { sink.flushNow() }
        datagramAcks.recycle(burstSinks: &sinks)
        if datagramAcks.flushScheduled { flushAcksNow(router) }
    }

    /// Queues the ack of a received realtime item, without suspending: datagram acks go out
    /// once the loop has handled what it read in this turn; a stream-path ack is written at
    /// once, in order, as a reply the node drops while the peer does not drain (the sender then
    /// falls the item back to its outbox).
    func queueAckNow(_ router: isolated DeliveryRouter, _ eventID: UUID, to peer: DeviceID, path: PingPath) {
        guard path == .datagram else { return transmitNow(router, .realtimeAck(eventID: eventID), to: peer, path: path) }
        // Inside a datagram burst its end sends them (`datagramBurstEnded`): no loop task.
        guard datagramAcks.queue(eventID, to: peer) else { return }
        router.loop.execute { router.onLoop { $0.consumer.flushAcksNow($0) } }
    }

    /// Sends the coalesced datagram acks.
    private func flushAcksNow(_ router: isolated DeliveryRouter) {
        guard var backlog = datagramAcks.take() else { return }
        for (peer, eventIDs) in backlog {
            DatagramAcks.messages(eventIDs) { message in
                router.counters.realtimeAckDatagrams &+= 1
                transmitNow(router, message, to: peer, path: .datagram)
            }
        }
        datagramAcks.recycle(&backlog)
        router.channels.flushDatagrams()
    }

    /// Sends the ack `message` without waiting for the write: the node shares this loop. A
    /// datagram is batched: `flushAcksNow` sends its acks together.
    private func transmitNow(_ router: isolated DeliveryRouter, _ message: DeliveryMessage, to peer: DeviceID, path: PingPath) {
        let bytes = message.encode()
        switch path {
        case .datagram: _ = try? router.channels.sendDatagram(bytes, to: peer, batched: true)
        case .stream: _ = router.channels.sendStreamIfDraining(bytes, to: peer)
        }
    }
}
