import NIOCore

/// The router's queues of inbound work from its channels: peer messages that are not handled at
/// once, in arrival order, and channel events, in order, each worked through by one consumer
/// task that waits here while its queue is empty. Realtime datagrams may be handled at once
/// only while no message is queued or being handled (`handlesAtOnce`), so a peer's messages
/// keep their order.
struct InboundQueue: Sendable {
    private(set) var messages = CircularBuffer<InboundChannelMessage>()
    /// Queued messages plus the one being handled.
    private(set) var unfinished = 0
    private(set) var events = CircularBuffer<PeerChannelEvent>()
    /// The router stops: the consumers end.
    private(set) var stopping = false
    private var messageWaiter: CheckedContinuation<Void, Never>?
    private var eventWaiter: CheckedContinuation<Void, Never>?

    /// Whether a received message may be handled before anything queued (nothing is).
    var handlesAtOnce: Bool { unfinished == 0 }

    mutating func append(_ message: InboundChannelMessage) {
        unfinished += 1
        messages.append(message)
    }

    mutating func append(_ event: PeerChannelEvent) {
        events.append(event)
    }

    /// The next message to handle (it stays unfinished until `messageDone`).
    mutating func nextMessage() -> InboundChannelMessage? { messages.popFirst() }

    mutating func messageDone() { unfinished -= 1 }

    mutating func nextEvent() -> PeerChannelEvent? { events.popFirst() }

    mutating func stop() { stopping = true }

    /// A consumer waits for work (resumed by `wakeable`).
    mutating func waitForMessage(_ waiter: CheckedContinuation<Void, Never>) { messageWaiter = waiter }
    mutating func waitForEvent(_ waiter: CheckedContinuation<Void, Never>) { eventWaiter = waiter }

    /// The waiting consumers that have work now (or must end): the caller resumes them.
    mutating func wakeable() -> (CheckedContinuation<Void, Never>?, CheckedContinuation<Void, Never>?) {
        var woken: (CheckedContinuation<Void, Never>?, CheckedContinuation<Void, Never>?) = (nil, nil)
        if messageWaiter != nil, !messages.isEmpty || stopping { swap(&woken.0, &messageWaiter) }
        if eventWaiter != nil, !events.isEmpty || stopping { swap(&woken.1, &eventWaiter) }
        return woken
    }
}
