import NIOCore

/// The router's queues of inbound work from its channels: peer messages that are not handled at
/// once, in arrival order, and channel events, in order, each worked through by one consumer
/// task that waits here while its queue is empty. Realtime datagrams may be handled at once
/// only while no message is queued or being handled (`handlesAtOnce`), so a peer's messages
/// keep their order.
///
/// The two queues are worked through independently, so a device's `.unpaired` event could be
/// handled before a message it sent just before: its handling would register the device again.
/// So an unpaired device's queued messages leave the queue with the event, and what it still
/// sends is refused (`refuses`) until it is paired again.
struct InboundQueue: Sendable {
    private(set) var messages = CircularBuffer<InboundChannelMessage>()
    /// Queued messages plus the one being handled.
    private(set) var unfinished = 0
    private(set) var events = CircularBuffer<PeerChannelEvent>()
    /// The router stops: the consumers end.
    private(set) var stopping = false
    /// Devices unpaired (and not paired again) since the router started: their messages are
    /// dropped. One entry per unpairing, a user's action.
    private var unpaired: Set<DeviceID> = []
    private var messageWaiter: CheckedContinuation<Void, Never>?
    private var eventWaiter: CheckedContinuation<Void, Never>?

    /// Whether a received message may be handled before anything queued (nothing is).
    var handlesAtOnce: Bool { unfinished == 0 }

    mutating func append(_ message: InboundChannelMessage) {
        unfinished += 1
        messages.append(message)
    }

    /// Queues a channel event. An unpairing takes the device's queued messages out of the
    /// queue (returned: the caller releases what the channels count for them); a pairing ends
    /// the refusal of its messages.
    mutating func append(_ event: PeerChannelEvent) -> [InboundChannelMessage] {
        events.append(event)
        switch event {
        case .unpaired(let peer), .memberRemoved(let peer):
            unpaired.insert(peer)
            guard messages.contains(where: { $0.peer == peer }) else { return [] }
            var kept = CircularBuffer<InboundChannelMessage>(initialCapacity: messages.count)
            var dropped: [InboundChannelMessage] = []
            for message in messages {
                if message.peer == peer { dropped.append(message) } else { kept.append(message) }
            }
            messages = kept
            unfinished -= dropped.count
            return dropped
        case .paired(let peer), .memberAdded(let peer):
            unpaired.remove(peer)
            return []
        case .activated, .deactivated:
            return []
        }
    }

    /// Whether a message from `peer` is dropped: the device was unpaired (an empty set is
    /// checked first, so the common case hashes nothing).
    func refuses(_ peer: DeviceID) -> Bool {
        !unpaired.isEmpty && unpaired.contains(peer)
    }

    /// The next message to handle (it stays unfinished until `messageDone`).
    mutating func nextMessage() -> InboundChannelMessage? { messages.popFirst() }

    mutating func messageDone() { unfinished -= 1 }

    mutating func nextEvent() -> PeerChannelEvent? { events.popFirst() }

    mutating func stop() { stopping = true }

    /// A consumer waits for work (resumed by `wakeable`), or is resumed at once when there is
    /// some already. The consumer found its queue empty before it got here, but an await on
    /// the router can hop through its loop, so work may have been appended (and the wake-up
    /// found no waiter) in between: without this check it would wait until the router stops.
    mutating func waitForMessage(_ waiter: CheckedContinuation<Void, Never>) {
        if !messages.isEmpty || stopping { waiter.resume() } else { messageWaiter = waiter }
    }

    mutating func waitForEvent(_ waiter: CheckedContinuation<Void, Never>) {
        if !events.isEmpty || stopping { waiter.resume() } else { eventWaiter = waiter }
    }

    /// The waiting consumers that have work now (or must end): the caller resumes them.
    mutating func wakeable() -> (CheckedContinuation<Void, Never>?, CheckedContinuation<Void, Never>?) {
        var woken: (CheckedContinuation<Void, Never>?, CheckedContinuation<Void, Never>?) = (nil, nil)
        if messageWaiter != nil, !messages.isEmpty || stopping { swap(&woken.0, &messageWaiter) }
        if eventWaiter != nil, !events.isEmpty || stopping { swap(&woken.1, &eventWaiter) }
        return woken
    }
}
