import MeshCore

/// Fan-out of one source to any number of `AsyncStream`s: every `subscribe()` returns a fresh
/// stream that sees every element yielded after the call, as `SessionSyncTransport` requires.
///
/// Each subscriber's stream holds at most `limits.capacity` elements it has not read yet;
/// `yield` waits while one is full (until its reader takes it down to the low watermark, or
/// stops reading), so a slow subscriber holds the source back instead of growing the buffer: the
/// transport's pump then stops taking its attachment's events and the client stops reading the
/// socket. A subscriber whose reader went away (task cancelled, stream dropped) is removed.
///
/// With `holdsBacklog`, elements yielded while nobody is subscribed are kept (in order, at most
/// `limits.capacity`; `yield` waits for a subscriber beyond that) and handed to the first
/// subscriber, so nothing that arrives before the app starts listening is lost. `yield`
/// reports whether at least one subscriber took the element.
final class MulticastStream<Element: Sendable>: Sendable {
    private struct State {
        var subscribers: [Int: BoundedEventBuffer<Element>] = [:]
        var nextKey = 0
        var backlog: [Element] = []
        var finished = false
        /// The `yield` waiting for room (only the pump yields, one element at a time).
        var waiter: UnsafeContinuation<Void, Never>?
        /// Room came while nobody waited: the next wait returns at once.
        var wakePending = false
    }

    private let state = Locked(State())
    private let holdsBacklog: Bool
    let limits: MeshEventBufferLimits

    init(holdsBacklog: Bool = false, limits: MeshEventBufferLimits = .default) {
        self.holdsBacklog = holdsBacklog
        self.limits = limits
    }

    /// A new stream of everything yielded from now on (plus the backlog for the first one).
    func subscribe() -> AsyncStream<Element> { subscribeTakingBacklog().stream }

    /// Like `subscribe()`, also returning the backlog elements this stream received.
    func subscribeTakingBacklog() -> (stream: AsyncStream<Element>, backlog: [Element]) {
        let buffer = BoundedEventBuffer<Element>(limits)
        let stream = buffer.makeStream()
        let (key, backlog): (Int?, [Element]) = state.withLock { state in
            if state.finished { return (nil, []) }
            let key = state.nextKey
            state.nextKey += 1
            state.subscribers[key] = buffer
            let backlog = state.backlog
            // At most `capacity` (the backlog's own bound), so never more than the stream holds.
            for element in backlog { _ = buffer.offer(element, force: true) }
            state.backlog.removeAll()
            return (key, backlog)
        }
        guard let key else {
            buffer.finish()
            return (stream, [])
        }
        buffer.setCallbacks(onRoom: { [weak self] in self?.wake() },
                            onTermination: { [weak self] in
                                self?.state.withLock { _ = $0.subscribers.removeValue(forKey: key) }
                                self?.wake()
                            })
        if !backlog.isEmpty { wake() }
        return (stream, backlog)
    }

    /// Hands `element` to every subscriber (or to the backlog), waiting while one of them is
    /// full; true when a subscriber took it.
    @discardableResult
    func yield(_ element: Element) async -> Bool {
        while true {
            if let taken = tryYield(element) { return taken }
            await waitForRoom()
        }
    }

    /// One attempt: the outcome, or nil when a subscriber (or the backlog) is full.
    private func tryYield(_ element: Element) -> Bool? {
        state.withLock { state in
            guard !state.finished else { return false }
            if state.subscribers.isEmpty {
                guard holdsBacklog else { return false }
                guard state.backlog.count < limits.capacity else { return nil }
                state.backlog.append(element)
                return false
            }
            // Only this method offers (the pump yields one element at a time).
            return BoundedEventBuffer.offer(element, toAll: state.subscribers.values) ? true : nil
        }
    }

    private func waitForRoom() async {
        await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
            let now: Bool = state.withLock { state in
                if state.wakePending || state.finished {
                    state.wakePending = false
                    return true
                }
                state.waiter = continuation
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// A subscriber has room, left, or arrived: the waiting `yield` tries again.
    private func wake() {
        let waiter: UnsafeContinuation<Void, Never>? = state.withLock { state in
            guard let waiter = state.waiter else {
                state.wakePending = true
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }

    /// Elements each subscriber holds, and the backlog's length (for tests).
    var bufferedCounts: (subscribers: [Int], backlog: Int) {
        state.withLock { ($0.subscribers.values.map(\.count), $0.backlog.count) }
    }

    /// Whether anyone is subscribed.
    var hasSubscribers: Bool { state.withLock { !$0.subscribers.isEmpty } }

    /// Ends every stream (each reader still gets what its stream holds); later subscribers get
    /// an empty, finished stream, and a waiting `yield` returns.
    func finish() {
        let subscribers = state.withLock { state in
            state.finished = true
            defer { state.subscribers.removeAll() }
            return Array(state.subscribers.values)
        }
        for subscriber in subscribers { subscriber.finish() }
        wake()
    }
}
