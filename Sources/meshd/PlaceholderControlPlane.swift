import MeshDaemon
import MeshLocalAPI
import ServiceLifecycle

/// TEMPORARY stand-in for `MeshNode` until the channel/pairing layer is merged: serves `status`
/// and an empty `peers`, and answers every pairing and ping request with `not-implemented`.
///
/// The lead replaces it in `Meshd.run()` (marked "MeshNode swap point") with
/// `MeshNode(configuration:logger:eventLoopGroup:)` and deletes this file.
actor PlaceholderControlPlane: MeshControlPlane, Service {
    private let configuration: DaemonConfiguration
    private let clock = ContinuousClock()
    private let startedAt: ContinuousClock.Instant

    init(configuration: DaemonConfiguration) {
        self.configuration = configuration
        self.startedAt = clock.now
    }

    func run() async throws {
        try? await gracefulShutdown()
    }

    func status() async -> DaemonStatus {
        let uptime = startedAt.duration(to: clock.now)
        return DaemonStatus(deviceID: "unavailable (placeholder control plane)", name: configuration.name,
                            listen: configuration.listen.description, socket: configuration.socketPath,
                            uptimeSeconds: Double(uptime.components.seconds) + Double(uptime.components.attoseconds) / 1e18,
                            counters: [:])
    }

    func peers() async -> [PeerStatus] { [] }

    func createPairingCode(validFor seconds: Double) async throws -> PairingInvitation { throw Self.notImplemented }
    func awaitPairing(code: String) async throws -> PairedDevice { throw Self.notImplemented }
    func cancelPairing(code: String) async {}
    func joinPairing(code: String, address: String) async throws -> PairedDevice { throw Self.notImplemented }
    func unpair(deviceID: String) async throws { throw ControlError.unknownPeer(deviceID) }
    func ping(deviceID: String, count: Int) async throws -> PingReport { throw ControlError.unknownPeer(deviceID) }

    private static let notImplemented = ControlError(
        code: "not-implemented", message: "this meshd build has no channel layer yet (placeholder control plane)")
}
