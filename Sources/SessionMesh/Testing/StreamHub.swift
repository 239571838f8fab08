import Synchronization

/// Fans elements out to every `AsyncStream` made from it (each stream buffers without bound and
/// sees what is yielded after it was made). Internal building block of the test transports.
final class StreamHub<Element: Sendable>: Sendable {
    private let continuations = Mutex<(next: Int, all: [Int: AsyncStream<Element>.Continuation])>((0, [:]))

    func makeStream() -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream<Element>.makeStream()
        let id = continuations.withLock { state in
            state.next += 1
            state.all[state.next] = continuation
            return state.next
        }
        continuation.onTermination = { [weak self] _ in
            self?.continuations.withLock { _ = $0.all.removeValue(forKey: id) }
        }
        return stream
    }

    func yield(_ element: Element) {
        let targets = continuations.withLock { Array($0.all.values) }
        for continuation in targets { continuation.yield(element) }
    }

    func finish() {
        let targets = continuations.withLock { state in
            defer { state.all = [:] }
            return Array(state.all.values)
        }
        for continuation in targets { continuation.finish() }
    }
}
