/// Several discoveries as one: typically ``AvahiPeerDiscovery`` plus ``StaticPeerDiscovery``.
///
/// Calls go to every member in order; events of all members arrive on one stream (each event
/// keeps its ``DiscoverySource``, so equal names from different sources do not clash). An
/// mDNS outage reported by one member does not affect the static peers of another.
public final class MergedPeerDiscovery: PeerDiscovery {
    private let members: [any PeerDiscovery]

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

    /// One stream carrying every member's events; it finishes when all members' streams have.
    public func events() -> AsyncStream<DiscoveryEvent> {
        let streams = members.map { $0.events() }
        let (merged, continuation) = AsyncStream.makeStream(of: DiscoveryEvent.self)
        let forwarder = Task {
            await withTaskGroup(of: Void.self) { group in
                for stream in streams {
                    group.addTask {
                        for await event in stream { continuation.yield(event) }
                    }
                }
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in forwarder.cancel() }
        return merged
    }

    /// Stops every member.
    public func stop() async {
        for member in members { await member.stop() }
    }
}
