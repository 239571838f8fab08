import Synchronization

/// Several discoveries as one: typically ``AvahiPeerDiscovery`` plus ``StaticPeerDiscovery``.
///
/// Calls go to every member in order; events of all members arrive on one stream (each event
/// keeps its ``DiscoverySource``, so equal names from different sources do not clash). An
/// mDNS outage reported by one member does not affect the static peers of another.
public final class MergedPeerDiscovery: PeerDiscovery {
    private let members: [any PeerDiscovery]
    /// The tasks forwarding the members' events into each merged stream, by id, until they end:
    /// `stop()` awaits them, so every merged stream has finished when it returns.
    private let forwarders = Mutex<(next: UInt64, running: [UInt64: Task<Void, Never>])>((0, [:]))

    /// Merges `members`; their order is the order of start, update and stop.
    public init(_ members: [any PeerDiscovery]) {
        self.members = members
    }

    /// Starts every member. If one throws, the members already started are stopped again and
    /// the error is rethrown.
    public func start(advertising advertisement: DiscoveryAdvertisement?) async throws(DiscoveryError) {
        for (index, member) in members.enumerated() {
            do throws(DiscoveryError) {
                try await member.start(advertising: advertisement)
            } catch {
                for started in members[..<index] { await started.stop() }
                throw error
            }
        }
    }

    /// Updates every member; the first error is rethrown after all were tried.
    public func updateAdvertisement(_ advertisement: DiscoveryAdvertisement?) async throws(DiscoveryError) {
        var firstError: DiscoveryError?
        for member in members {
            do throws(DiscoveryError) { try await member.updateAdvertisement(advertisement) } catch { firstError = firstError ?? error }
        }
        if let firstError { throw firstError }
    }

    /// One stream carrying every member's events; it finishes when all members' streams have
    /// (after `stop()`), or when its consumer stops reading.
    public func events() -> AsyncStream<DiscoveryEvent> {
        let streams = members.map { $0.events() }
        let (merged, continuation) = AsyncStream.makeStream(of: DiscoveryEvent.self)
        let forwarder: Task<Void, Never> = forwarders.withLock { forwarders in
            let id = forwarders.next
            forwarders.next &+= 1
            // Stored before it can end (the lock is held), and removed by its own last step.
            let task = Task {
                await withTaskGroup(of: Void.self) { group in
                    for stream in streams {
                        group.addTask {
                            for await event in stream { continuation.yield(event) }
                        }
                    }
                }
                continuation.finish()
                self.forwarders.withLock { _ = $0.running.removeValue(forKey: id) }
            }
            forwarders.running[id] = task
            return task
        }
        continuation.onTermination = { _ in forwarder.cancel() }
        return merged
    }

    /// Stops every member, then awaits the forwarding tasks: each member's stream finishes with
    /// its stop, so they end, and every merged stream has finished when this returns.
    public func stop() async {
        for member in members { await member.stop() }
        let running = forwarders.withLock { forwarders in
            defer { forwarders.running.removeAll() }
            return forwarders.running.sorted { $0.key < $1.key }.map(\.value)
        }
        for task in running { await task.value }
    }
}
