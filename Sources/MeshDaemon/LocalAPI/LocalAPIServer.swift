import Logging
import MeshLocalAPI
import NIOCore
import NIOPosix

/// The local API's Unix-domain stream server: binds the socket, serves connections with
/// `LocalAPIConnectionHandler`, and removes the socket file on shutdown.
///
/// Start it with `start(...)`; stop it with `shutdown()`. `LocalAPIService` wraps both for a
/// `ServiceGroup`.
public final class LocalAPIServer: Sendable {
    /// Resource limits of the server; the defaults suit a daemon.
    public struct Limits: Sendable, Equatable {
        /// Largest request body, bytes.
        public var maximumBodyLength = LocalAPIWireFormat.defaultMaximumBodyLength
        /// Requests running at once per connection; more wait in its queue and reading pauses.
        /// A reliable send runs until its commit: this many of one app's sends can share one
        /// fsync (at 32, a pipelining sender's groups were ≈ 18 items and reliable throughput
        /// ≈ 10 k msgs/s; at 256, ≈ 15–19 k on the same machine).
        public var maximumInFlight = 256
        /// Body bytes of the requests running at once per connection (one request may always
        /// run): with `maximumInFlight`, what bounds the memory one connection's requests pin.
        public var maximumInFlightBytes = 8 << 20
        /// Requests waiting per connection beyond which it is closed (one 64 KiB read holds at
        /// most 4096 frames, so only a broken reader path could reach it).
        public var maximumQueued = 8192
        /// Open connections beyond which new ones are refused.
        public var maximumConnections = 128
        /// Open connections per uid beyond which that uid's new ones are refused
        /// (`api_max_connections_per_uid`).
        public var maximumConnectionsPerUID = 32
        /// Body bytes of the requests running at once over all connections of one uid
        /// (`api_max_request_bytes_per_uid`); a request of a uid with nothing running may always
        /// start. Further requests wait, their connections' reading paused.
        public var maximumInFlightBytesPerUID = 16 << 20
        /// Seconds a new connection has to deliver its first whole request, and a frame begun
        /// to arrive whole (`LocalAPIConnectionDeadline`); between frames there is no deadline,
        /// so an attached app may stay idle for hours.
        public var firstRequestTimeout = 30.0
        /// See `firstRequestTimeout`.
        public var partialFrameTimeout = 30.0
        /// Seconds between two warnings of one kind that local clients can repeat (refused
        /// connections, closes for a deadline or the queue); the ones in between are counted and
        /// summarised in the next line.
        public var warningInterval = 10.0
        /// Outbound bytes buffered per connection below which it counts as writable again.
        public var writeBufferLowWatermark = 64 * 1024
        /// Outbound bytes buffered per connection above which reading pauses and events are shed.
        public var writeBufferHighWatermark = 256 * 1024

        /// The default limits.
        public init() {}
    }

    /// The socket path served.
    public let socketPath: String
    /// Counters shared by all connections.
    public let counters: LocalAPICounters
    private let serverChannel: any Channel
    private let registry: LocalAPIConnectionRegistry
    private let socketFile: SocketFile
    private let inode: UInt64
    private let logger: Logger
    /// The tasks performing this server's requests.
    private let requestTasks: LocalAPIRequestTasks
    /// Writes what the rate-limited warnings held back, every `Limits.warningInterval`.
    private let warningSummaries: RepeatedTask

    private init(socketPath: String, counters: LocalAPICounters, serverChannel: any Channel,
                 registry: LocalAPIConnectionRegistry, socketFile: SocketFile, inode: UInt64,
                 requestTasks: LocalAPIRequestTasks, warningSummaries: RepeatedTask, logger: Logger) {
        self.requestTasks = requestTasks
        self.warningSummaries = warningSummaries
        self.socketPath = socketPath
        self.counters = counters
        self.serverChannel = serverChannel
        self.registry = registry
        self.socketFile = socketFile
        self.inode = inode
        self.logger = logger
    }

    /// Binds `socketPath` with permission bits `mode` and starts serving.
    ///
    /// Creates the parent folder (`0700`) when missing, removes a stale socket that nothing
    /// answers on, and throws `LocalAPIServerError` when another daemon is live there or the
    /// path is unusable. The socket is bound under a temporary name, given its mode, then
    /// renamed into place, so it is never reachable with looser permissions.
    public static func start(socketPath: String, mode: UInt16, dispatcher: LocalAPIDispatcher,
                             eventLoopGroup: any EventLoopGroup, logger: Logger,
                             limits: Limits = Limits(), counters: LocalAPICounters = LocalAPICounters()) async throws -> LocalAPIServer {
        let socketFile = SocketFile(path: socketPath)
        try socketFile.prepare()
        let registry = LocalAPIConnectionRegistry(limit: limits.maximumConnections)
        let warnings = LocalAPIWarnings(logger: logger, intervalSeconds: limits.warningInterval,
                                        now: { NIODeadline.now().uptimeNanoseconds })
        let budget = LocalAPIUIDBudget(limits: .init(maximumConnections: limits.maximumConnectionsPerUID,
                                                     maximumInFlightBytes: limits.maximumInFlightBytesPerUID))
        // Connections are served on the delivery router's loop (its node's): request → router →
        // node → socket then runs on one thread, with no hop between threads.
        let bootstrap = ServerBootstrap(group: eventLoopGroup, childGroup: dispatcher.router?.loop ?? eventLoopGroup)
            .serverChannelOption(ChannelOptions.backlog, value: 64)
            .childChannelOption(ChannelOptions.autoRead, value: true)
            .childChannelOption(ChannelOptions.allowRemoteHalfClosure, value: true)
            // One read of at most 64 KiB per read request: this is what bounds the requests a
            // paused connection can still deliver (64 KiB / 16-byte frames = 4096 < maximumQueued).
            .childChannelOption(ChannelOptions.maxMessagesPerRead, value: 1)
            .childChannelOption(ChannelOptions.recvAllocator,
                                value: AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 2048, maximum: 64 * 1024))
            .childChannelOption(ChannelOptions.writeBufferWaterMark,
                                value: .init(low: limits.writeBufferLowWatermark, high: limits.writeBufferHighWatermark))
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try Self.configure(channel, registry: registry, budget: budget, dispatcher: dispatcher,
                                       limits: limits, counters: counters, warnings: warnings, logger: logger)
                }
            }
        let channel: any Channel
        do {
            channel = try await bootstrap.bind(unixDomainSocketPath: socketFile.temporaryPath).get()
        } catch {
            throw LocalAPIServerError.cannotBind(socketPath, socketFile.bindFailure(error))
        }
        let inode: UInt64
        do {
            inode = try socketFile.install(mode: mode)
        } catch {
            try? await channel.close()
            throw error
        }
        let interval = TimeAmount.nanoseconds(Nanoseconds.signed(seconds: limits.warningInterval))
        let warningSummaries = channel.eventLoop.scheduleRepeatedTask(initialDelay: interval, delay: interval) { _ in
            warnings.summarise()
        }
        logger.info("local API listening", metadata: ["api.socket": "\(socketPath)",
                                                      "api.mode": "\(String(mode, radix: 8))"])
        return LocalAPIServer(socketPath: socketPath, counters: counters, serverChannel: channel,
                              registry: registry, socketFile: socketFile, inode: inode,
                              requestTasks: dispatcher.requestTasks, warningSummaries: warningSummaries, logger: logger)
    }

    /// Open client connections now.
    public var connectionCount: Int { registry.count }

    /// Stops accepting, tells each client `shutting-down`, closes them, waits for the requests
    /// still being performed (cancelled by the close) to end, and removes the socket file (only
    /// if it is still this server's).
    public func shutdown() async {
        try? await serverChannel.close()
        warningSummaries.cancel()
        let body = (try? LocalAPIJSON.encode(LocalAPIErrorBody(
            code: LocalAPIErrorBody.Code.shuttingDown, message: "meshd is shutting down"))) ?? ByteBuffer()
        let frame = LocalAPIFrame(kind: .error, operation: .unspecified, requestID: 0, body: body)
        for channel in registry.closeAll() {
            channel.writeAndFlush(frame).whenComplete { _ in channel.close(promise: nil) }
            try? await channel.closeFuture.get()
        }
        // Closing a connection cancelled its requests; what still runs ends before the server does.
        await requestTasks.stopAll()
        socketFile.remove(inode: inode)
        logger.info("local API stopped", metadata: ["api.socket": "\(socketPath)"])
    }

    private static func configure(_ channel: any Channel, registry: LocalAPIConnectionRegistry,
                                  budget: LocalAPIUIDBudget, dispatcher: LocalAPIDispatcher, limits: Limits,
                                  counters: LocalAPICounters, warnings: LocalAPIWarnings, logger: Logger) throws {
        let sync = channel.pipeline.syncOperations
        let lookahead = LocalAPIFrameLookahead()
        try sync.addHandler(ByteToMessageHandler(LocalAPIFrameDecoder(maximumBodyLength: limits.maximumBodyLength,
                                                                      lookahead: lookahead)))
        let writer = LocalAPIFrameWriter()
        try sync.addHandler(writer)
        // Read now (on the channel's loop the socket option is read at once), so the uid is
        // known before the first request and counts against its own connection limit.
        let credentials = PeerCredentials.read(from: channel)
        let uid = credentials?.uid ?? LocalAPIUIDBudget.unknownUID
        var refusal: String?
        if !budget.openConnection(uid: uid) {
            counters.add(.connectionsRefusedPerUID)
            warnings.warn(.refusedPerUID, metadata: ["client.uid": "\(uid)", "api.limit": "\(limits.maximumConnectionsPerUID)"])
            refusal = "uid \(uid) already has \(limits.maximumConnectionsPerUID) local connections open to meshd; close some and retry"
        } else if !registry.add(channel) {
            budget.closeConnection(uid: uid)
            counters.add(.connectionsRefused)
            warnings.warn(.refused, metadata: ["client.uid": "\(uid)", "api.limit": "\(limits.maximumConnections)"])
            refusal = "meshd already serves \(limits.maximumConnections) local connections; close some and retry"
        }
        if let refusal {
            try sync.addHandler(LocalAPIRefusedConnectionHandler(
                error: LocalAPIErrorBody(code: LocalAPIErrorBody.Code.tooManyConnections, message: refusal)))
            return
        }
        channel.closeFuture.whenComplete { _ in
            registry.remove(channel)
            budget.closeConnection(uid: uid)
        }
        try sync.addHandler(LocalAPIConnectionHandler(
            dispatcher: dispatcher, counters: counters,
            flow: LocalAPIFlowControl(maximumInFlight: limits.maximumInFlight,
                                      maximumQueued: limits.maximumQueued,
                                      maximumInFlightBytes: limits.maximumInFlightBytes),
            lookahead: lookahead, credentials: credentials, budget: budget,
            deadlines: LocalAPIConnectionDeadline.Limits(firstRequest: Nanoseconds.from(seconds: limits.firstRequestTimeout),
                                                         partialFrame: Nanoseconds.from(seconds: limits.partialFrameTimeout)),
            warnings: warnings, logger: logger))
    }
}
