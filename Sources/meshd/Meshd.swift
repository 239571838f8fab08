import ArgumentParser
import Foundation
import Logging
import MeshCore
import MeshDaemon
import NIOCore
import NIOPosix
import ServiceLifecycle

/// `meshd`: the SessionMesh daemon. Reads its configuration, bootstraps logging and runs the
/// node, the local API and the systemd notifier in one `ServiceGroup` until SIGTERM or SIGINT.
@main
struct Meshd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "meshd",
        abstract: "The SessionMesh daemon: pairs with your other devices and carries app data between them.",
        discussion: """
            Settings come from the defaults, then the config file (docs/CONFIG.md), then these flags. \
            Exit codes: 0 stopped by SIGTERM or SIGINT, 1 failed (or another meshd holds the state folder), \
            64 usage error, 73 cannot create the state folder, 77 unsafe state folder (owner or mode), \
            78 configuration error.
            """,
        version: SessionMeshVersion.current)

    @Flag(help: "Run as a per-user daemon: XDG state, runtime and config folders instead of /var/lib, /run and /etc.")
    var user = false

    @Option(name: .customLong("config"), help: ArgumentHelp("Config file (must exist). Default: /etc/sessionmesh/meshd.toml, or $XDG_CONFIG_HOME/sessionmesh/meshd.toml with --user.", valueName: "FILE"))
    var configFile: String?

    @Option(name: .customLong("state-dir"), help: ArgumentHelp("Folder for the identity, paired devices and queues (created 0700). Default: /var/lib/sessionmesh, or $XDG_STATE_HOME/sessionmesh (~/.local/state/sessionmesh) with --user.", valueName: "DIR"))
    var stateDirectory: String?

    @Option(help: ArgumentHelp("Local API socket path. Default: /run/sessionmesh/meshd.sock, or with --user $XDG_RUNTIME_DIR/sessionmesh/meshd.sock (without XDG_RUNTIME_DIR: meshd.sock in the state folder).", valueName: "PATH"))
    var socket: String?

    @Option(help: ArgumentHelp("UDP and TCP listen address (same port for both; 0 picks a free one). Default: 0.0.0.0:47470.", valueName: "HOST:PORT"))
    var listen: String?

    @Option(name: .customLong("peer"), help: ArgumentHelp("A static peer address; repeatable. Replaces the file's 'peers'.", valueName: "HOST:PORT"))
    var peers: [String] = []

    @Option(help: "This device's name, shown to peers while pairing.")
    var name: String?

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel: String?

    @Flag(name: .customLong("no-mdns"), help: "Do not publish or browse over mDNS (Avahi); use static peers and known addresses only.")
    var noMDNS = false

    @Option(name: .customLong("relay"), help: ArgumentHelp("An MQTT broker to relay through when no direct path works: mqtts://USER@HOST[:8883] or mqtt://USER@HOST[:1883]. Overrides the file's 'relay'. Put the password in relay_password_file: one in the URL works but other local users can read command lines.", valueName: "URL"))
    var relay: String?

    @Option(name: .customLong("clock-offset-ms"), help: ArgumentHelp("FOR TESTS ONLY: skew this daemon's wall clock by N milliseconds, so tests can check clock-offset estimation. A release build takes it only with MESH_TEST_RUN=1 in the environment.", valueName: "N"))
    var clockOffsetMilliseconds: Int64?

    func run() async throws {
        // First: nothing secret is in memory yet, and from here on none of it reaches a core file.
        do {
            try ProcessHardening.disableCoreDumps()
        } catch {
            FileHandle.standardError.write(Data("meshd: cannot turn core dumps off: \(error)\n".utf8))
            throw ExitCode.failure
        }
        let configuration: DaemonConfiguration
        do {
            configuration = try ConfigurationLoader().load(mode: user ? .user : .system, overrides: overrides)
        } catch {
            FileHandle.standardError.write(Data("meshd: configuration error: \(error)\n".utf8))
            throw ExitCode(78)  // EX_CONFIG: systemd does not restart on it (RestartPreventExitStatus).
        }
        let level = Logger.Level(rawValue: configuration.logLevel) ?? .info
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "meshd")
        // Held until exit: a second meshd on the same state folder refuses to start.
        let stateLock: StateDirectoryLock
        do {
            stateLock = try StateDirectoryLock(stateDirectory: configuration.stateDirectory)
        } catch {
            logger.critical("cannot use the state folder", metadata: ["state.dir": "\(configuration.stateDirectory)",
                                                                       "error": "\(error.message)"])
            // A user's first run without --user meets the system daemon's folders.
            if error.code == .cannotCreate, !user, stateDirectory == nil, geteuid() != 0 {
                logger.notice("""
                    the system daemon's state folder needs root (systemd/meshd.service runs it); \
                    for a daemon of your own, run meshd --user (state in ~/.local/state/sessionmesh)
                    """)
            }
            switch error.code {
            case .inUse: throw ExitCode.failure
            case .cannotCreate: throw ExitCode(73)  // EX_CANTCREAT
            case .unsafe: throw ExitCode(77)        // EX_NOPERM: systemd does not restart on it
            }
        }
        defer { withExtendedLifetime(stateLock) {} }
        if let mode = stateLock.tightenedFrom {
            logger.notice("state folder was readable by others; made it private", metadata: [
                "state.dir": "\(configuration.stateDirectory)", "state.mode.was": "\(StateDirectoryLock.octal(mode))",
                "state.mode": "0700"])
        }
        // First, before anything else logs: where the state and the socket are (README promises it).
        logger.info("meshd starting", metadata: ["daemon.name": "\(configuration.name)",
                                                 "daemon.listen": "\(configuration.listen)",
                                                 "api.socket": "\(configuration.socketPath)",
                                                 "state.dir": "\(configuration.stateDirectory)"])

        if let relay = configuration.relay {
            logger.info("relay configured", metadata: ["relay.url": "\(relay.url)", "relay.topic_prefix": "\(relay.topicPrefix)"])
            if relay.url.password != nil {
                logger.warning("the relay URL holds a password: other local users can read command lines and may see it; put it in relay_password_file instead")
            }
        }

        let directory = SystemUserDirectory()
        for group in configuration.controlAllowList.groupNames where directory.gid(ofGroupNamed: group) == nil {
            logger.warning("control_allow names a group this system does not have; it grants nothing until it exists",
                           metadata: ["config.group": "\(group)"])
        }

        // One loop: the node, the delivery router and every local API connection run on it (no
        // thread hops on the delivery path); SQLite work has its own threads. One thread also keeps
        // the idle footprint small.
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let notifier = SystemdNotifier(environment: ProcessInfo.processInfo.environment)
        do {
            let node = try MeshNode(configuration: configuration, logger: logger, eventLoopGroup: group,
                                    discovery: MeshNode.defaultDiscovery(for: configuration, logger: logger))
            let store = try DeliveryRouter.openStore(stateDirectory: configuration.stateDirectory,
                                                     options: configuration.storeOptions)
            defer { store.close() }
            let router = DeliveryRouter(node: node, store: store, options: configuration.routerOptions, logger: logger)
            var limits = LocalAPIServer.Limits()
            limits.maximumConnectionsPerUID = configuration.localAPIConnectionsPerUID
            limits.maximumInFlightBytesPerUID = configuration.localAPIRequestBytesPerUID
            let api = LocalAPIService(configuration: configuration, controlPlane: node, eventLoopGroup: group,
                                      logger: logger, limits: limits, router: router, onListening: {
                do {
                    try notifier.notify("READY=1")
                } catch {
                    logger.error("sd_notify READY failed", metadata: ["error": "\(error)"])
                }
            })
            // Dependency order: node, then the router (consumes the node's messages), then the
            // local API (uses both). Shutdown runs in reverse: clients go, the router flushes, the node stops.
            let services = ServiceGroup(configuration: ServiceGroupConfiguration(
                services: [
                    .init(service: node),
                    .init(service: router),
                    .init(service: api),
                    .init(service: SystemdNotifyService(notifier: notifier, logger: logger)),
                ],
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger))
            try await services.run()
            logger.info("meshd stopped")
        } catch {
            logger.critical("meshd failed", metadata: ["error": "\(error)"])
            try? await group.shutdownGracefully()
            throw ExitCode.failure
        }
        try await group.shutdownGracefully()
    }

    private var overrides: ConfigurationLoader.Overrides {
        var overrides = ConfigurationLoader.Overrides()
        overrides.configFile = configFile
        overrides.stateDirectory = stateDirectory
        overrides.socketPath = socket
        overrides.listen = listen
        overrides.peers = peers
        overrides.name = name
        overrides.logLevel = logLevel
        overrides.clockOffsetMilliseconds = clockOffsetMilliseconds
        overrides.noMDNS = noMDNS
        overrides.relay = relay
        return overrides
    }
}
