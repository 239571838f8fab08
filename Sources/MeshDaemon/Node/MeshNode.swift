import Foundation
import Logging
import MeshCrypto
import MeshDiscovery
import MeshCore
import NIOCore
import NIOPosix
import ServiceLifecycle

/// One SessionMesh daemon's peer and channel layer: identity, paired devices, pairing,
/// encrypted channels over stream and datagram paths, keepalives, clock offsets.
///
/// Create it with the daemon's configuration and run it in a `ServiceGroup` (or call `run()`
/// in a task); it binds its transport (by default `SocketTransport`: UDP and TCP on the same
/// port), reconnects to paired devices and serves the control plane until graceful shutdown or
/// cancellation, then closes every path.
/// Several nodes can run in one process (tests). A node runs once.
///
/// Application data (the delivery router's messages) goes through `NodeDeliveryChannels`: sends,
/// and one inbound handler for messages and channel events; the local API uses the
/// `MeshControlPlane` methods.
///
/// The actor is the coordinator: it holds the shared services (`PeerChannels`, the transport,
/// counters, the job queue), the stream and datagram paths, and the public API; each flow with
/// the state it owns is a component on the actor's executor (`ConnectionGate`, `Dialer`,
/// `PeerFinder`, `NodePairing`, `ChannelMaintenance`, `PingProber`, `InboundHandOff`).
public actor MeshNode: MeshControlPlane, Service {
    enum Phase { case idle, running, stopped }

    let configuration: DaemonConfiguration
    let tuning: ChannelTuning
    let logger: Logger
    let eventLoopGroup: any EventLoopGroup
    /// The loop this node runs on: its actor, sockets and tasks (see `EventLoopTaskExecutor`).
    nonisolated let loop: any EventLoop
    nonisolated let taskExecutor: EventLoopTaskExecutor
    let clock: any MeshClock
    nonisolated let identity: DeviceIdentity
    let store: PairedDeviceStore
    let startedAt: UInt64
    /// Where peer addresses come from besides the store (mDNS, static peers); nil: none.
    let discovery: (any PeerDiscovery)?

    var phase = Phase.idle
    /// Paired devices with their channels, session indices and the handshake rules.
    var channels: PeerChannels
    var counters = NodeCounters()
    /// What each channel connection holds of this node's writes, and why channels closed.
    var outbound: OutboundQueues
    /// Test seam: drop every received datagram (the tests set it).
    var ignoresDatagrams = false

    // The components: each owns its state and runs on this actor's executor.
    /// TCP connections until they authenticate: admission, deadlines, the responder handshake.
    let gate: ConnectionGate
    /// Outgoing channels: dial scheduling and backoff, the initiator handshake.
    let dialer = Dialer()
    /// Discovery: what it found, the advertisement, the addresses a dial tries.
    let finder = PeerFinder()
    /// Pairing codes, their waiters and attempts; joining an inviter.
    let pairing = NodePairing()
    /// Keepalives, leases, key expiry and rekeying of the active channels.
    let maintenance = ChannelMaintenance()
    /// Outstanding ping probes.
    let prober = PingProber()
    /// The inbound handler (the delivery router) and what waits for it.
    let handOff = InboundHandOff()
    /// The relay broker link, when `relay` is configured.
    let relay: NodeRelay?
    /// The device set: roster, joins, gossip, removals.
    let deviceSet: NodeDeviceSet

    /// The network the node's paths run on (`NodeTransport`): listening, accepted and dialled
    /// stream paths, datagrams.
    nonisolated let transport: any NodeTransport
    /// The address the transport is bound to, once `run()` has bound it.
    public internal(set) var boundListenAddress: DaemonConfiguration.Endpoint?

    nonisolated let jobs: AsyncStream<NodeJob>
    nonisolated let jobQueue: AsyncStream<NodeJob>.Continuation

    /// Loads (or creates) the identity key `identity.key` and the paired-device store in
    /// `configuration.stateDirectory`; throws `NodeError` when either is unusable (a corrupt
    /// store is reported, never replaced). Does not touch the network until `run()`.
    ///
    /// `discovery` finds peer addresses (meshd passes `MeshNode.defaultDiscovery(for:logger:)`:
    /// Avahi plus the static peers); the node starts and stops it. Nil: no discovery.
    public init(configuration: DaemonConfiguration, logger: Logger, eventLoopGroup: any EventLoopGroup,
                discovery: (any PeerDiscovery)? = nil) throws {
        try self.init(configuration: configuration, logger: logger, eventLoopGroup: eventLoopGroup,
                      clock: SystemMeshClock(wallOffsetMilliseconds: configuration.clockOffsetMilliseconds),
                      discovery: discovery)
    }

    /// As `init(configuration:logger:eventLoopGroup:discovery:)` with an injected clock, and
    /// optionally another transport than the direct one (`SocketTransport`): the simulator
    /// passes simulated paths. The transport is bound on one loop of `eventLoopGroup`, the
    /// node's. `random` is where session indices, ephemeral keys and backoff jitter come from
    /// (default: libsodium; the simulator passes a seeded source).
    public init(configuration: DaemonConfiguration, logger: Logger, eventLoopGroup: any EventLoopGroup,
                clock: any MeshClock, transport: (any NodeTransport)? = nil, random: any NodeRandomSource = SodiumRandomSource(),
                discovery: (any PeerDiscovery)? = nil) throws {
        try self.init(configuration: configuration, logger: logger, eventLoopGroup: eventLoopGroup, clock: clock,
                      transport: transport, random: random, discovery: discovery, relayBrokers: nil)
    }

    /// As `init(configuration:logger:eventLoopGroup:clock:transport:random:discovery:)`, with
    /// the relay's broker connections made by `relayBrokers` (the simulator's broker) instead
    /// of real MQTT clients. With `relayBrokers` and `relay` configured, an injected
    /// `transport` is the direct side and the real `RelayTransport` runs beside it.
    package init(configuration: DaemonConfiguration, logger: Logger, eventLoopGroup: any EventLoopGroup,
                 clock: any MeshClock, transport: (any NodeTransport)?, random: any NodeRandomSource,
                 discovery: (any PeerDiscovery)?, relayBrokers: (any RelayBrokerFactory)?) throws {
        self.discovery = discovery
        self.configuration = configuration
        self.tuning = configuration.channelTuning
        self.logger = logger
        self.eventLoopGroup = eventLoopGroup
        self.loop = eventLoopGroup.next()
        self.taskExecutor = EventLoopTaskExecutor(self.loop)
        self.clock = clock
        self.startedAt = clock.monotonicNanoseconds()
        let state = try NodeStateFiles(stateDirectory: configuration.stateDirectory)
        identity = state.identity
        store = state.store
        deviceSet = try NodeDeviceSet(enabled: configuration.deviceSet, stateDirectory: configuration.stateDirectory,
                                      identity: state.identity)
        let relay = try configuration.relay.map { settings throws(ConfigurationError) in
            try NodeRelay(settings: settings, logger: logger, brokers: relayBrokers ?? RelayBrokerLinkFactory())
        }
        self.relay = relay
        if let transport, let relay, relayBrokers != nil {
            self.transport = CompositeTransport(direct: transport, relay: RelayTransport(relay: relay, ownPublicKey: state.identity.keyPair.publicKey,
                                                                                        clock: clock, logger: logger))
        } else {
            self.transport = transport ?? Self.defaultTransport(relay: relay, publicKey: state.identity.keyPair.publicKey,
                                                                clock: clock, logger: logger)
        }
        channels = PeerChannels(localKeys: identity.keyPair, tuning: configuration.channelTuning, records: state.records,
                                leaseSeconds: configuration.reachabilityLease, random: random)
        gate = ConnectionGate(tuning: configuration.channelTuning)
        outbound = OutboundQueues(replyLimit: configuration.channelTuning.outboundReplyBytes,
                                  limit: configuration.channelTuning.outboundBytes,
                                  stallSeconds: max(2, configuration.channelTuning.outboundStallKeepalives * configuration.keepaliveInterval))
        (jobs, jobQueue) = AsyncStream.makeStream(of: NodeJob.self)
    }

    /// This device's ID.
    public nonisolated var deviceID: DeviceID { identity.deviceID }

    /// The actor runs on the node's event loop (one thread for the node's whole state machine).
    public nonisolated var unownedExecutor: UnownedSerialExecutor { loop.executor.asUnownedSerialExecutor() }

    /// Binds UDP and TCP, reconnects to paired devices and serves until graceful shutdown or
    /// cancellation; then closes every socket and returns. Throws `NodeError` when it cannot
    /// listen.
    public func run() async throws {
        try await withTaskExecutorPreference(taskExecutor) { try await self.serve() }
    }

    private func serve() async throws {
        guard phase == .idle else { throw NodeError(code: .alreadyRan, message: "this node already ran; create a new MeshNode") }
        phase = .running
        connectRelayPeers()
        let bound = try await transport.bind(configuration.listen, on: loop, receiver: NodeDatagramReceiver(self))
        boundListenAddress = bound
        deviceSet.start(self)
        logger.info("mesh node listening", metadata: ["listen": "\(bound)", "device.id": "\(identity.deviceID.short)"])
        // In device ID order (not the dictionary's, which changes per process): a seed replays.
        for id in channels.peers.keys.sorted() { dialer.scheduleDial(self, id, immediately: true) }
        maintenance.start(self)
        let queue = jobQueue
        // The accept loop is not a child of this task on purpose: cancelling it could drop
        // accepted connections still buffered in NIO's async server channel, which traps
        // (swift-nio #2637). It ends by itself once the listener closes.
        let transport = transport
        let acceptor = Task(executorPreference: taskExecutor) {
            try await transport.acceptStreams { path, frames in await ConnectionGate.serveInbound(path, frames: &frames, node: self) }
        }
        var failure: (any Error)?
        do {
            try await withTaskCancellationHandler {
                try await withGracefulShutdownHandler {
                    try await withThrowingDiscardingTaskGroup { group in
                        group.addTask { try await self.receiveDatagrams() }
                        group.addTask { await self.runDiscovery() }
                        for await job in self.jobs {
                            group.addTask { await Dialer.perform(job, on: self) }
                        }
                        self.closeEverything()
                        group.cancelAll()
                    }
                } onGracefulShutdown: {
                    queue.finish()
                }
            } onCancel: {
                queue.finish()
            }
        } catch is CancellationError {
            // Cancelled from outside: a normal stop.
        } catch {
            failure = error
        }
        closeEverything()
        await discovery?.stop()
        if case .failure(let error) = await acceptor.result, failure == nil, !(error is CancellationError) {
            failure = error
        }
        if let failure {
            logger.error("mesh node failed", metadata: ["error": "\(failure)"])
            throw failure
        }
        logger.info("mesh node stopped")
    }

    /// Waits while the transport receives datagrams (they go to `NodeDatagramReceiver`);
    /// cancelling closes it.
    private nonisolated func receiveDatagrams() async throws {
        let transport = transport
        try await withTaskCancellationHandler {
            try await transport.waitUntilClosed()
        } onCancel: {
            transport.close()
        }
    }

    /// Closes listeners and connections and fails every waiter (shutdown).
    func closeEverything() {
        guard phase != .stopped else { return }
        phase = .stopped
        deviceSet.save(self)
        maintenance.stop()
        relay?.stop()
        dialer.stop()
        transport.close()
        gate.closeAll()
        for id in channels.peers.keys.sorted() { dropChannel(id, reason: "daemon stopping", redial: false) }
        pairing.stopWaiters()
        prober.fail(to: nil)
        pairing.stopSearches()
        handOff.releaseWaiters()
    }

    /// The datagram port this node announces in handshakes (0 before it is bound).
    var announcedUDPPort: UInt16 { UInt16(boundListenAddress?.port ?? 0) }
}
