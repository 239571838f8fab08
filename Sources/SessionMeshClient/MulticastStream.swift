/// Fan-out of one source to any number of `AsyncStream`s: every `subscribe()` returns a fresh
/// stream that sees every element yielded after the call, as `SessionSyncTransport` requires.
///
/// With `holdsBacklog`, elements yielded while nobody is subscribed are kept (in order) and
/// handed to the first subscriber, so nothing that arrives before the app starts listening is
/// lost. `yield` reports whether at least one subscriber took the element.
final class MulticastStream<Element: Sendable>: Sendable {
    private struct State {
        var continuations: [Int: AsyncStream<Element>.Continuation] = [:]
        var nextKey = 0
        var backlog: [Element] = []
        var finished = false
    }

    private let state = Locked(State())
    private let holdsBacklog: Bool

    init(holdsBacklog: Bool = false) { self.holdsBacklog = holdsBacklog }

    /// A new stream of everything yielded from now on (plus the backlog for the first one).
    func subscribe() -> AsyncStream<Element> { subscribeTakingBacklog().stream }

    /// Like `subscribe()`, also returning the backlog elements this stream received.
    func subscribeTakingBacklog() -> (stream: AsyncStream<Element>, backlog: [Element]) {
        let (stream, continuation) = AsyncStream.makeStream(of: Element.self)
        let (key, backlog): (Int?, [Element]) = state.withLock { state in
            if state.finished { return (nil, []) }
            let key = state.nextKey
            state.nextKey += 1
            state.continuations[key] = continuation
            let backlog = state.backlog
            for element in backlog { continuation.yield(element) }
            state.backlog.removeAll()
            return (key, backlog)
        }
        guard let key else {
            continuation.finish()
            return (stream, [])
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.continuations.removeValue(forKey: key) }
        }
        return (stream, backlog)
    }

    /// Hands `element` to every subscriber (or to the backlog); true when a subscriber took it.
    @discardableResult
    func yield(_ element: Element) -> Bool {
        state.withLock { state in
            guard !state.finished else { return false }
            if state.continuations.isEmpty {
                if holdsBacklog { state.backlog.append(element) }
                return false
            }
            for continuation in state.continuations.values { continuation.yield(element) }
            return true
        }
    }

    /// Whether anyone is subscribed.
    var hasSubscribers: Bool { state.withLock { !$0.continuations.isEmpty } }

    /// Ends every stream; later subscribers get an empty, finished stream.
    func finish() {
        let continuations = state.withLock { state in
            state.finished = true
            defer { state.continuations.removeAll() }
            return Array(state.continuations.values)
        }
        for continuation in continuations { continuation.finish() }
    }
}
