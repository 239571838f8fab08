import Foundation
import MeshCore
import MeshCrypto
import MeshDaemon

/// One simulated daemon: the real `MeshNode`, `DeliveryRouter` and `DeliveryStore` on a
/// `SimulatedEventLoop`, the node's network a `SimulatedTransport`.
///
/// Each incarnation has its own loop, node and router; a crash abandons them (nothing of them
/// runs again) and keeps exactly what was on disk: the state folder's files (the store's
/// database and WAL, the identity key, the paired-device store) are copied as they are at that
/// instant (what `kill -9` leaves), and the next incarnation starts from the copy.
public final class SimulatedDaemon: @unchecked Sendable {
    public let index: Int
    /// The device's static key pair (its identity key file says the same).
    let identity: X25519KeyPair
    public let deviceID: DeviceID
    public let clock: SimulatedMeshClock
    /// The folder holding each incarnation's state folder.
    let folder: String
    public private(set) var incarnation = 0
    public internal(set) var loop: SimulatedEventLoop
    public internal(set) var node: MeshNode?
    public internal(set) var router: DeliveryRouter?
    /// The current incarnation's store (nil while crashed).
    public internal(set) var store: DeliveryStore?
    /// The current incarnation's network (nil while crashed).
    var transport: SimulatedTransport?
    public var alive: Bool { router != nil }
    /// Jobs that reached this daemon's loops from other threads, over all incarnations.
    var foreignJobsBefore = 0
    var foreignJobs: Int { foreignJobsBefore + loop.foreignJobs }
    /// What the channel layers of the ended incarnations went through.
    var figuresBefore = ChannelFigures()

    /// What this daemon's channel layers went through, over all incarnations so far.
    var channelFigures: ChannelFigures { figuresBefore + currentFigures }

    private var currentFigures: ChannelFigures {
        guard let node, !loop.abandoned else { return ChannelFigures() }
        let read = node.channelFiguresOnLoop()
        var figures = ChannelFigures()
        figures.handshakes = read.handshakes
        figures.rekeys = read.rekeys
        figures.leasesExpired = read.leasesExpired
        figures.replaysRefused = read.replaysRefused
        return figures
    }

    init(index: Int, identity: X25519KeyPair, folder: String, clock: SimulatedMeshClock, virtualClock: VirtualClock) {
        self.index = index
        self.identity = identity
        self.deviceID = DeviceID(publicKey: identity.publicKey)
        self.folder = folder
        self.clock = clock
        self.loop = SimulatedEventLoop(clock: virtualClock)
    }

    /// This incarnation's state folder.
    var stateFolder: String { "\(folder)/d\(index)-\(incarnation)" }

    /// Starts `task` on this daemon's loop with its router; false when the daemon is down.
    @discardableResult
    func spawn(_ body: @escaping @Sendable (DeliveryRouter) async -> Void) -> Bool {
        guard let router else { return false }
        Task(executorPreference: loop) { await body(router) }
        return true
    }

    /// Crash: the loop is abandoned, the state folder's files copied as they are for the next
    /// incarnation (`kill -9` keeps what was written), and the old store closed without
    /// touching the copy.
    func crash() throws {
        figuresBefore = channelFigures
        loop.abandon()
        router = nil
        node = nil
        transport = nil
        let old = stateFolder
        incarnation += 1
        let new = stateFolder
        let files = FileManager.default
        try files.createDirectory(atPath: new, withIntermediateDirectories: true)
        for name in try files.contentsOfDirectory(atPath: old).sorted() {
            try files.copyItem(atPath: "\(old)/\(name)", toPath: "\(new)/\(name)")
        }
        store?.close()
        store = nil
        try? files.removeItem(atPath: old)
    }
}
