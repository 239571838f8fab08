import Foundation
import MeshCore

/// The event buffer of one `attach`: the handler registers it under the attach's request id; its
/// identity is what `LocalAPIClientHandler.forget(_:)` removes.
typealias LocalAPIEventStream = BoundedEventBuffer<MeshClientEvent>

/// A bounded buffer between a producer (the connection's loop, or the transport's pump) that
/// offers elements and the app that reads them through `makeStream()`.
///
/// Holds at most `capacity` elements: `offer` refuses one more, and the producer then stops
/// (the handler stops reading the socket) until the app has read the buffer down to
/// `lowWatermark`, when `onRoom` runs (once per refusal).
///
/// The stream is an `AsyncStream` built with `init(unfolding:)`, so every element the app takes
/// passes through `next()` here and is counted. The stream ends (returns nil) after `finish()`
/// once the buffer is empty. It is terminated — the buffer dropped, `onTermination` run, later
/// offers accepted and discarded — when a task waiting in `next()` is cancelled, or when the
/// app lets go of the stream (the `Reader` the stream's closure holds is released), so a reader
/// that went away never holds the socket shut.
final class BoundedEventBuffer<Element: Sendable>: @unchecked Sendable {
    let capacity: Int
    let lowWatermark: Int

    private let lock = NSLock()
    private var buffer: [Element] = []
    private var head = 0
    private var waiters: [UnsafeContinuation<Element?, Never>] = []
    /// No event will be offered any more (the connection ended, the attach failed).
    private var finished = false
    /// The reader is gone; events are discarded.
    private var terminated = false
    /// The handler was refused and waits for `onRoom`.
    private var roomWanted = false
    private var onRoom: (@Sendable () -> Void)?
    private var onTermination: (@Sendable () -> Void)?

    /// In handler mode (`init(handler:onEnd:)`): what takes each element at once, on the
    /// producer's thread, and what runs once when no element will come any more.
    private let handler: (@Sendable (Element) -> Void)?
    private var onEnd: (@Sendable () -> Void)?

    init(capacity: Int, lowWatermark: Int) {
        self.capacity = max(1, capacity)
        self.lowWatermark = min(max(0, lowWatermark), self.capacity - 1)
        handler = nil
    }

    /// Handler mode: nothing is buffered. `offer` calls `handler` with the element right away,
    /// on the producer's thread (the connection's loop), in the order offered, and never
    /// refuses one; the producer is held back by the handler's own time instead. `finish()`
    /// runs `onEnd` once; after it nothing reaches `handler`. There is no stream.
    init(handler: @escaping @Sendable (Element) -> Void, onEnd: (@Sendable () -> Void)?) {
        capacity = 1
        lowWatermark = 0
        self.handler = handler
        self.onEnd = onEnd
    }

    convenience init(_ limits: MeshEventBufferLimits) {
        self.init(capacity: limits.capacity, lowWatermark: limits.lowWatermark)
    }

    /// Sets what runs when a refused offer may now succeed, and when the reader went away.
    /// Call before the stream is registered with the handler.
    func setCallbacks(onRoom: @escaping @Sendable () -> Void, onTermination: @escaping @Sendable () -> Void) {
        lock.withLock {
            self.onRoom = onRoom
            self.onTermination = onTermination
        }
    }

    /// The app's side. Create it once.
    func makeStream() -> AsyncStream<Element> {
        let reader = Reader(self)
        return AsyncStream(unfolding: { await reader.stream.next() })
    }

    /// Events held now.
    var count: Int { lock.withLock { buffer.count - head } }

    // MARK: - The loop's side

    /// Hands `event` over; false (and nothing held) when the buffer is full. Accepted and
    /// discarded once the reader is gone or the stream finished. With `force`, never refused.
    func offer(_ event: Element, force: Bool = false) -> Bool {
        if let handler {
            // Only the producer calls `handler`, so elements reach it in order, one at a time.
            guard !lock.withLock({ finished || terminated }) else { return true }
            handler(event)
            return true
        }
        let (accepted, waiter): (Bool, UnsafeContinuation<Element?, Never>?) = lock.withLock {
            if terminated || finished { return (true, nil) }
            if !waiters.isEmpty { return (true, waiters.removeFirst()) }
            if !force, buffer.count - head >= capacity {
                roomWanted = true
                return (false, nil)
            }
            buffer.append(event)
            return (true, nil)
        }
        waiter?.resume(returning: event)
        return accepted
    }

    /// Hands `element` to every buffer in `buffers`, or to none when one of them is full (that
    /// one then runs `onRoom` once there is room): true when handed over. For a single producer
    /// (the connection's loop, the transport's pump), so room found is still there when offered.
    static func offer(_ element: Element, toAll buffers: some Collection<BoundedEventBuffer>) -> Bool {
        guard buffers.allSatisfy({ $0.hasRoom() }) else { return false }
        for buffer in buffers { _ = buffer.offer(element, force: true) }
        return true
    }

    /// Whether `offer` would accept now; when not, `onRoom` runs once there is room.
    func hasRoom() -> Bool {
        lock.withLock {
            if terminated || finished || !waiters.isEmpty || buffer.count - head < capacity { return true }
            roomWanted = true
            return false
        }
    }

    /// No more events: the reader gets what is buffered, then the end.
    func finish() {
        let (waiting, end): ([UnsafeContinuation<Element?, Never>], (@Sendable () -> Void)?) = lock.withLock {
            finished = true
            defer {
                waiters.removeAll()
                onEnd = nil
            }
            return (waiters, onEnd)
        }
        for waiter in waiting { waiter.resume(returning: nil) }
        end?()
    }

    // MARK: - The app's side

    fileprivate func next() async -> Element? {
        let ready: (event: Element?, room: (@Sendable () -> Void)?)? = lock.withLock { takeLocked() }
        if let ready {
            ready.room?()
            return ready.event
        }
        return await withTaskCancellationHandler {
            await withUnsafeContinuation { (continuation: UnsafeContinuation<Element?, Never>) in
                let ready: (event: Element?, room: (@Sendable () -> Void)?)? = lock.withLock {
                    if let ready = takeLocked() { return ready }
                    waiters.append(continuation)
                    return nil
                }
                if let ready {
                    ready.room?()
                    continuation.resume(returning: ready.event)
                }
            }
        } onCancel: {
            terminate()
        }
    }

    /// Under the lock: the next event (nil: the stream ended) and the `onRoom` to run after
    /// unlocking when this take made room; nil when the reader must wait.
    private func takeLocked() -> (event: Element?, room: (@Sendable () -> Void)?)? {
        if terminated { return (nil, nil) }
        guard head < buffer.count else { return finished ? (nil, nil) : nil }
        let event = buffer[head]
        head += 1
        if head == buffer.count {
            buffer.removeAll(keepingCapacity: buffer.count <= 1_024)
            head = 0
        } else if head >= 1_024, head * 2 >= buffer.count {
            buffer.removeFirst(head)
            head = 0
        }
        var room: (@Sendable () -> Void)?
        if roomWanted, buffer.count - head <= lowWatermark {
            roomWanted = false
            room = onRoom
        }
        return (event, room)
    }

    /// The reader went away: drop the buffer, end the waits, and let the handler move on.
    fileprivate func terminate() {
        let (waiting, callbacks): ([UnsafeContinuation<Element?, Never>], [@Sendable () -> Void]) = lock.withLock {
            guard !terminated else { return ([], []) }
            terminated = true
            buffer.removeAll()
            head = 0
            defer { waiters.removeAll() }
            let callbacks = [roomWanted ? onRoom : nil, onTermination].compactMap { $0 }
            roomWanted = false
            onRoom = nil
            onTermination = nil
            return (waiters, callbacks)
        }
        for waiter in waiting { waiter.resume(returning: nil) }
        for callback in callbacks { callback() }
    }

    /// Held only by the app's `AsyncStream`: when the app lets go of the stream, it is released
    /// and the stream terminated.
    private final class Reader: Sendable {
        let stream: BoundedEventBuffer

        init(_ stream: BoundedEventBuffer) { self.stream = stream }

        deinit { stream.terminate() }
    }
}
