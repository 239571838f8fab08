import Foundation
import Logging
import MeshMQTT
import NIOCore
import NIOPosix

/// An `MQTTClient` on an event loop of its own, its events read in order with a deadline.
/// Confirmed subscriptions (`.subscribed`) are kept apart (`nextSubscribed`), so a test reading
/// connections and messages does not see them in between.
final class MQTTClientProbe: @unchecked Sendable {
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    var loop: any EventLoop { group.next() }
    private let queue = EventQueue<MQTTClientEvent>()
    private let subscriptions = EventQueue<String>()
    /// Whether every event arrived on the client's loop.
    let eventsOnLoop = LockedFlag()
    private let clientBox: NIOLoopBoundBox<MQTTClient?>

    init(_ options: MQTTClientOptions, password: String?) throws {
        let queue = self.queue, subscriptions = self.subscriptions
        let loop = group.next()
        var bytes = password.map { Array($0.utf8) }
        let secret = bytes.map { _ in MQTTPassword(taking: &bytes!) }
        let flag = eventsOnLoop
        clientBox = try loop.submit {
            let client = try MQTTClient(options: options, password: secret, eventLoop: loop, logger: Logger(label: "mqtt-test")) { event in
                if !loop.inEventLoop { flag.set() }
                if case .subscribed(let topic) = event { subscriptions.push(topic) } else { queue.push(event) }
            }
            return NIOLoopBoundBox(client, eventLoop: loop)
        }.wait()
    }

    /// Runs `body` with the client on its loop.
    func on<T: Sendable>(_ body: @escaping @Sendable (MQTTClient) throws -> T) async throws -> T {
        let box = clientBox
        return try await loop.submit { try body(box.value!) }.get()
    }

    /// The next event for which `skip` does not hold, or nil after `seconds`.
    func next(timeout seconds: Double = 10, skip: @escaping @Sendable (MQTTClientEvent) -> Bool = { _ in false }) async -> MQTTClientEvent? {
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            guard let event = await queue.next(timeout: deadline.timeIntervalSinceNow) else { return nil }
            if !skip(event) { return event }
        }
    }

    /// The next topic the broker confirmed a subscription to, or nil after `seconds`.
    func nextSubscribed(timeout seconds: Double = 10) async -> String? {
        await subscriptions.next(timeout: seconds)
    }

    func shutdown() async {
        let box = clientBox
        try? await loop.submit { box.value?.close(); box.value = nil }.get()
        try? await group.shutdownGracefully()
    }
}

/// A flag threads may set.
final class LockedFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    func set() { lock.withLock { value = true } }
    var isSet: Bool { lock.withLock { value } }
}

/// Values pushed by one side, awaited in order with a deadline by the other.
final class EventQueue<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var values: [Value] = []
    private var waiter: (id: UInt64, continuation: CheckedContinuation<Value?, Never>)?
    private var nextID: UInt64 = 0

    func push(_ value: Value) {
        lock.lock()
        if let waiter {
            self.waiter = nil
            lock.unlock()
            waiter.continuation.resume(returning: value)
            return
        }
        values.append(value)
        lock.unlock()
    }

    /// The next value, or nil when none came within `seconds`.
    func next(timeout seconds: Double) async -> Value? {
        await withCheckedContinuation { continuation in
            lock.lock()
            if !values.isEmpty {
                let value = values.removeFirst()
                lock.unlock()
                continuation.resume(returning: value)
                return
            }
            nextID += 1
            let id = nextID
            waiter = (id, continuation)
            lock.unlock()
            DispatchQueue.global().asyncAfter(deadline: .now() + max(0, seconds)) { [weak self] in
                guard let self else { return }
                self.lock.lock()
                guard let waiter = self.waiter, waiter.id == id else { self.lock.unlock(); return }
                self.waiter = nil
                self.lock.unlock()
                waiter.continuation.resume(returning: nil)
            }
        }
    }
}
