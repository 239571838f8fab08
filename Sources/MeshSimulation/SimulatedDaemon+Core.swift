import Foundation
import Logging
import MeshDaemon

/// Where the simulation meets the core: the real router and store over the simulated channels.
extension SimulatedDaemon {
    /// Starts the current incarnation on a fresh loop: opens its folder's `delivery.sqlite` (the
    /// previous incarnation's files as a crash left them) and runs a `DeliveryRouter` whose
    /// channels are the simulated network.
    func boot(simulation: Simulation) throws {
        foreignJobsBefore += loop.foreignJobs
        loop = SimulatedEventLoop(clock: simulation.context.clock)
        try FileManager.default.createDirectory(atPath: stateFolder, withIntermediateDirectories: true)
        let store = try DeliveryRouter.openStore(stateDirectory: stateFolder, options: simulation.storeOptions)
        let channels = SimulatedChannels(index: index, deviceIDs: simulation.daemons.map(\.deviceID), clock: clock, loop: loop,
                                         network: simulation.network, skews: simulation.context.skews)
        let router = DeliveryRouter(channels: channels, store: store, options: simulation.routerOptions,
                                    logger: Logger(label: "sim.d\(index)", factory: { _ in SwiftLogNoOpLogHandler() }))
        self.store = store
        self.channels = channels
        self.router = router
        Task(executorPreference: loop) { try? await router.run() }
    }

    /// A network event for this daemon: a message from a peer, or its channel going up or down.
    func receive(_ event: NetworkEvent, simulation: Simulation) {
        channels?.deliver(event)
    }

    /// The end of the run: the loop is abandoned and the store closed.
    func shutDown() {
        loop.abandon()
        router = nil
        channels = nil
        store?.close()
        store = nil
    }
}
