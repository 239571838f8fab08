import Foundation
import Logging
import MeshCore
import MeshCrypto
import MeshDaemon

/// Where the simulation meets the core: the real node, router and store over the simulated
/// network.
extension SimulatedDaemon {
    /// Starts the current incarnation on a fresh loop: a `MeshNode` over a `SimulatedTransport`
    /// with the folder's identity and paired devices, and a `DeliveryRouter` on the node over
    /// the folder's `delivery.sqlite` (the previous incarnation's files as a crash left them).
    /// The first incarnation's folder is provisioned first: its identity key and a pairing
    /// with every other daemon (`PairingProvision`), as if each pair had paired.
    func boot(simulation: Simulation) throws {
        foreignJobsBefore += loop.foreignJobs
        loop = SimulatedEventLoop(clock: simulation.context.clock)
        if incarnation == 0 && !FileManager.default.fileExists(atPath: stateFolder) {
            try PairingProvision.write(identity: identity, pairings: simulation.pairings(of: index), stateDirectory: stateFolder)
        }
        let store = try DeliveryRouter.openStore(stateDirectory: stateFolder, options: simulation.storeOptions)
        let transport = SimulatedTransport(index: index, network: simulation.network, loop: loop)
        let logger = SimulatedLogHandler.logger(label: "d\(index)", clock: simulation.context.clock)
        let random = SimulatedRandomSource(simulation.nodeRandom(index, incarnation: incarnation))
        var configuration = simulation.nodeConfiguration(index, stateDirectory: stateFolder)
        simulation.configureRelay(&configuration)
        let node = try MeshNode(configuration: configuration, logger: logger, eventLoopGroup: loop, clock: clock, transport: transport,
                                random: random, discovery: nil, relayBrokers: simulation.relayBrokers)
        let router = DeliveryRouter(node: node, store: store, options: simulation.routerOptions, logger: logger)
        self.store = store
        self.transport = transport
        self.node = node
        self.router = router
        Task(executorPreference: loop) { try? await node.run() }
        Task(executorPreference: loop) { try? await router.run() }
    }

    /// A network event for this daemon.
    func receive(_ event: NetworkEvent) {
        transport?.handle(event)
    }

    /// The end of the run: the loop is abandoned and the store closed.
    func shutDown() {
        figuresBefore = channelFigures
        loop.abandon()
        router = nil
        node = nil
        transport = nil
        store?.close()
        store = nil
    }
}
