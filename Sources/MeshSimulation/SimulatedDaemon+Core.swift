import Foundation
import MeshDaemon

/// Where the simulation meets the core: building a router over the simulated channels and
/// handing it what the network delivers.
extension SimulatedDaemon {
    /// Starts the current incarnation: opens its store folder's `delivery.sqlite` and a router
    /// on a fresh loop whose channels are the simulated network.
    func boot(simulation: Simulation) throws {
        throw SimulationEnvironmentError("the delivery router cannot run without a MeshNode yet (see /work/notes/sim-needs.md)")
    }

    /// A network event for this daemon: a message from a peer, or its channel going up or down.
    func receive(_ event: NetworkEvent, simulation: Simulation) {}

    /// The end of the run: the loop is abandoned and the store closed.
    func shutDown() {
        loop.abandon()
        router = nil
        store?.close()
        store = nil
    }
}
