import Foundation
import MeshCore
import MeshDaemon

/// One simulated daemon: the real `DeliveryRouter` and `DeliveryStore` on a `SimulatedEventLoop`,
/// with the simulated network in place of its node's channels.
///
/// Each incarnation has its own loop and router; a crash abandons both (nothing of them runs
/// again) and keeps exactly what the store had committed: the database files are copied as they
/// are on disk at that instant (what `kill -9` leaves), and the next incarnation opens the copy.
public final class SimulatedDaemon: @unchecked Sendable {
    public let index: Int
    public let deviceID: DeviceID
    public let clock: SimulatedMeshClock
    /// The folder holding each incarnation's state folder.
    let folder: String
    public private(set) var incarnation = 0
    public internal(set) var loop: SimulatedEventLoop
    public internal(set) var router: DeliveryRouter?
    /// The current incarnation's store (nil while crashed).
    public internal(set) var store: DeliveryStore?
    /// The current incarnation's channels (nil while crashed).
    var channels: SimulatedChannels?
    public var alive: Bool { router != nil }
    /// Jobs that reached this daemon's loops from other threads, over all incarnations.
    var foreignJobsBefore = 0
    var foreignJobs: Int { foreignJobsBefore + loop.foreignJobs }

    init(index: Int, folder: String, clock: SimulatedMeshClock, virtualClock: VirtualClock) {
        self.index = index
        self.folder = folder
        self.clock = clock
        self.deviceID = Self.deviceID(index)
        self.loop = SimulatedEventLoop(clock: virtualClock)
    }

    /// A fixed device ID per index (the fingerprint of a made-up public key).
    public static func deviceID(_ index: Int) -> DeviceID {
        DeviceID(publicKey: [UInt8](repeating: UInt8(truncatingIfNeeded: index &+ 1), count: 32))
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

    /// Crash: the loop is abandoned, the store's files copied as they are for the next
    /// incarnation (`kill -9` keeps what was committed), and the old connection closed without
    /// touching the copy.
    func crash() throws {
        loop.abandon()
        router = nil
        channels = nil
        let old = stateFolder
        incarnation += 1
        let new = stateFolder
        let files = FileManager.default
        try files.createDirectory(atPath: new, withIntermediateDirectories: true)
        for suffix in ["", "-wal", "-journal"] {
            let source = "\(old)/delivery.sqlite\(suffix)"
            if files.fileExists(atPath: source) { try files.copyItem(atPath: source, toPath: "\(new)/delivery.sqlite\(suffix)") }
        }
        store?.close()
        store = nil
        try? files.removeItem(atPath: old)
    }
}
