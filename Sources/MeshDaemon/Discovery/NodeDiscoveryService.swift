import Logging
import MeshDiscovery
import NIOCore

/// The node's discovery while it runs: starts the backend, applies its events and sends
/// advertisement updates as child tasks of the node's `run()`, and keeps a maintenance timer
/// on the node's loop (interfaces have no event to wait on) until the node stops. What the
/// inputs change is `DiscoveryTracker`'s decision; the node's `PeerFinder` carries it out.
struct NodeDiscoveryService {
    let discovery: any PeerDiscovery
    /// The node (a fake in tests).
    let node: any NodeDiscoveryHost
    /// Where the maintenance timer runs: the node's loop (a testing loop on virtual time in tests).
    let loop: any EventLoop
    let logger: Logger

    /// How often the timer re-reads this machine's interfaces, matches newly paired devices
    /// and retries a failed advertisement update.
    static let maintenanceInterval = TimeAmount.milliseconds(250)

    /// Runs until the node stops (cancellation) or the backend's events end. Never throws: a
    /// discovery that cannot start is logged and the node runs on with the addresses it has.
    func run() async {
        let events = discovery.events()
        let advertisement = await node.wantedAdvertisement()
        do {
            try await discovery.start(advertising: advertisement)
        } catch {
            logger.error("discovery could not start; only known and static addresses are used", metadata: ["error": "\(error)"])
            return
        }
        let (updates, updateQueue) = AsyncStream.makeStream(of: DiscoveryAdvertisement?.self)
        // Armed before the node hears of the start (its first pass is an interval away).
        let maintenance = LoopTicker.start(on: loop, every: Self.maintenanceInterval) { [weak node] in
            node?.maintainDiscoveryOnLoop() ?? false
        }
        await node.discoveryStarted(advertising: advertisement, updates: updateQueue)
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await event in events { await node.applyDiscovery(event) }
            }
            group.addTask {
                for await wanted in updates { await update(to: wanted) }
            }
            await group.next()
            group.cancelAll()
        }
        maintenance.cancel()
        await node.discoveryEnded()
    }

    /// Sends one advertisement update and reports how it went.
    private func update(to wanted: DiscoveryAdvertisement?) async {
        var succeeded = true
        do {
            try await discovery.updateAdvertisement(wanted)
        } catch {
            succeeded = false
            logger.warning("could not update the mDNS advertisement", metadata: ["error": "\(error)"])
        }
        await node.advertisementUpdated(wanted, succeeded: succeeded)
    }
}

/// What `NodeDiscoveryService` needs of the node: `MeshNode`, or a fake in tests.
protocol NodeDiscoveryHost: AnyObject, Sendable {
    /// What the node should advertise now.
    func wantedAdvertisement() async -> DiscoveryAdvertisement?
    /// Discovery started with `advertisement` published; `updates` takes the next ones.
    func discoveryStarted(advertising advertisement: DiscoveryAdvertisement?,
                          updates: AsyncStream<DiscoveryAdvertisement?>.Continuation) async
    /// Applies one discovery event.
    func applyDiscovery(_ event: DiscoveryEvent) async
    /// An advertisement update ended.
    func advertisementUpdated(_ advertisement: DiscoveryAdvertisement?, succeeded: Bool) async
    /// Discovery stopped.
    func discoveryEnded() async
    /// One maintenance pass, called on the service's loop; false once the node stops (the
    /// timer ends).
    func maintainDiscoveryOnLoop() -> Bool
}
