import Synchronization

/// Fans discovery events out to any number of `AsyncStream` subscribers and remembers the
/// current state, so a late subscriber first gets a replay of what is known now.
///
/// Thread-safe: producers (the Avahi event-loop thread, a static list) call it from any
/// thread. Continuations are yielded to under the hub's own lock, which is never held while
/// calling anything that could take another lock; streams are finished outside it, because
/// finishing runs `onTermination`, which takes the lock again.
final class DiscoveryEventHub: Sendable {
    private struct State {
        var nextSubscriberID = 0
        var subscribers: [Int: AsyncStream<DiscoveryEvent>.Continuation] = [:]
        var services: [ServiceKey: DiscoveredService] = [:]
        var availability: DiscoveryEvent?
        var publishedName: String?
        var finished = false
    }

    private struct ServiceKey: Hashable {
        var name: String
        var source: DiscoverySource
    }

    private let state = Mutex(State())
    /// Events a slow subscriber may fall behind by before the oldest are dropped.
    private let bufferLimit: Int

    init(bufferLimit: Int = 4096) {
        self.bufferLimit = bufferLimit
    }

    /// A new stream: the replay of the current state, then live events.
    func subscribe() -> AsyncStream<DiscoveryEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: DiscoveryEvent.self,
                                                            bufferingPolicy: .bufferingNewest(bufferLimit))
        let registered: Int? = state.withLock { s in
            guard !s.finished else { return nil }
            let id = s.nextSubscriberID
            s.nextSubscriberID += 1
            s.subscribers[id] = continuation
            if let availability = s.availability { continuation.yield(availability) }
            if let name = s.publishedName { continuation.yield(.published(instanceName: name)) }
            for key in s.services.keys.sorted(by: { ($0.source.rawValue, $0.name) < ($1.source.rawValue, $1.name) }) {
                if let service = s.services[key] { continuation.yield(.resolved(service)) }
            }
            return id
        }
        guard let id = registered else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            self?.state.withLock { s in _ = s.subscribers.removeValue(forKey: id) }
        }
        return stream
    }

    /// Records and broadcasts a resolved service; returns false (and sends nothing) when
    /// nothing changed since the last value.
    @discardableResult
    func resolved(_ service: DiscoveredService) -> Bool {
        state.withLock { s in
            let key = ServiceKey(name: service.instanceName, source: service.source)
            guard !s.finished, s.services[key] != service else { return false }
            s.services[key] = service
            broadcast(.resolved(service), in: s)
            return true
        }
    }

    /// Forgets and broadcasts the removal of a service that was reported before.
    @discardableResult
    func removed(instanceName: String, source: DiscoverySource) -> Bool {
        state.withLock { s in
            let key = ServiceKey(name: instanceName, source: source)
            guard !s.finished, s.services.removeValue(forKey: key) != nil else { return false }
            broadcast(.removed(instanceName: instanceName, source: source), in: s)
            return true
        }
    }

    /// Records and broadcasts `.available`, only on a change; returns whether it changed.
    @discardableResult
    func markAvailable() -> Bool {
        state.withLock { s in
            guard !s.finished, s.availability != .available else { return false }
            s.availability = .available
            broadcast(.available, in: s)
            return true
        }
    }

    /// Records `.unavailable(reason)`, only when previously available or unknown, forgets every
    /// service learned from `source` without individual removals; returns whether it changed.
    @discardableResult
    func markUnavailable(_ reason: DiscoveryUnavailableReason, forgetting source: DiscoverySource) -> Bool {
        state.withLock { s in
            guard !s.finished else { return false }
            if case .unavailable = s.availability { return false }
            s.availability = .unavailable(reason)
            s.publishedName = nil
            s.services = s.services.filter { $0.key.source != source }
            broadcast(.unavailable(reason), in: s)
            return true
        }
    }

    /// Records and broadcasts the name the advertisement is live under.
    func published(instanceName: String) {
        state.withLock { s in
            guard !s.finished, s.publishedName != instanceName else { return }
            s.publishedName = instanceName
            broadcast(.published(instanceName: instanceName), in: s)
        }
    }

    /// Forgets the published name (advertisement withdrawn), without an event.
    func withdrawn() {
        state.withLock { s in s.publishedName = nil }
    }

    /// Finishes every stream; later subscribers get an already finished stream.
    func finish() {
        let continuations = state.withLock { s -> [AsyncStream<DiscoveryEvent>.Continuation] in
            s.finished = true
            defer { s.subscribers.removeAll() }
            return Array(s.subscribers.values)
        }
        for continuation in continuations { continuation.finish() }
    }

    private func broadcast(_ event: DiscoveryEvent, in s: State) {
        for continuation in s.subscribers.values { continuation.yield(event) }
    }
}
