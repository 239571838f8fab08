import Logging
import NIOCore
import ServiceLifecycle

/// The local API server as a `Service`: listens on `configuration.socketPath` until graceful
/// shutdown, then closes every client and removes the socket file.
///
/// Put it in the `ServiceGroup` after the `MeshNode` it serves (shutdown runs in reverse, so
/// clients are gone before the node stops). `onListening` runs once the socket accepts
/// connections — the moment for `READY=1`. If the socket cannot be bound, `run()` throws a
/// `LocalAPIServerError`.
public struct LocalAPIService: Service {
    private let configuration: DaemonConfiguration
    private let dispatcher: LocalAPIDispatcher
    private let eventLoopGroup: any EventLoopGroup
    private let logger: Logger
    private let limits: LocalAPIServer.Limits
    private let onListening: @Sendable () -> Void
    /// Counters of this service's server (fold them into status if wanted).
    public let counters: LocalAPICounters

    /// Creates the service; nothing happens until `run()`. With a `router`, the data operations
    /// (attach, send, snapshots, sessions…) are served; without one they fail with
    /// `delivery-unavailable`.
    public init(configuration: DaemonConfiguration, controlPlane: any MeshControlPlane,
                eventLoopGroup: any EventLoopGroup, logger: Logger,
                limits: LocalAPIServer.Limits = LocalAPIServer.Limits(),
                counters: LocalAPICounters = LocalAPICounters(),
                router: DeliveryRouter? = nil,
                onListening: @escaping @Sendable () -> Void = {}) {
        self.configuration = configuration
        self.dispatcher = LocalAPIDispatcher(controlPlane: controlPlane,
                                             defaultPairingLifetime: configuration.pairingCodeLifetime,
                                             maximumBodyLength: limits.maximumBodyLength,
                                             counters: counters, router: router,
                                             featureAllowList: configuration.featureAllowList,
                                             controlRole: ControlRole(allowList: configuration.controlAllowList))
        self.eventLoopGroup = eventLoopGroup
        self.logger = logger
        self.limits = limits
        self.counters = counters
        self.onListening = onListening
    }

    /// Serves until graceful shutdown or cancellation.
    public func run() async throws {
        let server = try await LocalAPIServer.start(
            socketPath: configuration.socketPath, mode: configuration.socketMode, dispatcher: dispatcher,
            eventLoopGroup: eventLoopGroup, logger: logger, limits: limits, counters: counters)
        onListening()
        try? await gracefulShutdown()
        await server.shutdown()
    }
}

extension LocalAPIService: CustomStringConvertible {
    /// `LocalAPIService(SOCKET)`, for ServiceLifecycle's logs.
    public var description: String { "LocalAPIService(\(configuration.socketPath))" }
}
