import Foundation

/// Resolves a `DaemonConfiguration`: the mode's defaults, then the config file, then flags.
///
/// This is `meshd`'s entry point for configuration; tests can call it with their own
/// environment and file reader.
public struct ConfigurationLoader: Sendable {
    /// System daemon or per-user daemon.
    public enum Mode: Sendable, Equatable {
        /// `/var/lib/sessionmesh`, `/run/sessionmesh/meshd.sock`, `/etc/sessionmesh/meshd.toml`.
        case system
        /// XDG folders: state, runtime and config of the user (`meshd --user`).
        case user
    }

    /// Command-line values; each one set overrides the file. Strings are unparsed flag text.
    public struct Overrides: Sendable, Equatable {
        /// `--config FILE`: must exist when given.
        public var configFile: String?
        /// `--state-dir DIR`.
        public var stateDirectory: String?
        /// `--socket PATH`.
        public var socketPath: String?
        /// `--listen HOST:PORT`.
        public var listen: String?
        /// `--peer HOST:PORT`, repeatable; when any is given they replace the file's `peers`.
        public var peers: [String] = []
        /// `--name NAME`.
        public var name: String?
        /// `--log-level LEVEL`.
        public var logLevel: String?
        /// `--clock-offset-ms N` (tests only).
        public var clockOffsetMilliseconds: Int64?
        /// `--no-mdns`: true turns mDNS off whatever the file says.
        public var noMDNS = false
        /// `--relay URL`: the broker, over the file's `relay`.
        public var relay: String?

        /// No overrides.
        public init() {}
    }

    /// The defaults of a mode.
    public struct Defaults: Sendable, Equatable {
        /// State folder.
        public var stateDirectory: String
        /// Socket path (user mode without `XDG_RUNTIME_DIR`: `meshd.sock` in the state folder).
        public var socketPath: String?
        /// Config file read when `--config` is not given (missing is fine).
        public var configFile: String
    }

    /// The environment (`HOME`, `XDG_*`).
    public let environment: [String: String]
    /// Reads a file's text, or returns nil when it does not exist; throws for other failures.
    public let readFile: @Sendable (String) throws -> String?
    /// Folder relative flag paths are resolved against.
    public let workingDirectory: String
    /// Whether the options for tests (`--clock-offset-ms`) need `MESH_TEST_RUN=1` in the
    /// environment: true in a release build, false in a debug build.
    public let testOptionsNeedTestRun: Bool

    /// The environment variable that lets a release build take the options for tests
    /// (`MESH_TEST_RUN=1`): a test harness sets it, a service never should.
    public static let testRunVariable = "MESH_TEST_RUN"

    /// Whether this is a release build (`#if DEBUG` false).
    public static var isReleaseBuild: Bool {
        #if DEBUG
        false
        #else
        true
        #endif
    }

    /// Creates a loader over the real file system unless told otherwise.
    public init(environment: [String: String] = ProcessInfo.processInfo.environment,
                workingDirectory: String = FileManager.default.currentDirectoryPath,
                testOptionsNeedTestRun: Bool = ConfigurationLoader.isReleaseBuild,
                readFile: @escaping @Sendable (String) throws -> String? = ConfigurationLoader.readFileIfPresent) {
        self.environment = environment
        self.workingDirectory = workingDirectory
        self.testOptionsNeedTestRun = testOptionsNeedTestRun
        self.readFile = readFile
    }

    /// The defaults of `mode` in this environment.
    public func defaults(for mode: Mode) throws(ConfigurationError) -> Defaults {
        switch mode {
        case .system:
            return Defaults(stateDirectory: "/var/lib/sessionmesh", socketPath: "/run/sessionmesh/meshd.sock",
                            configFile: "/etc/sessionmesh/meshd.toml")
        case .user:
            let home = try absoluteEnvironment("HOME")
            let state = (try? absoluteEnvironment("XDG_STATE_HOME")).map { $0 + "/sessionmesh" }
                ?? home.map { $0 + "/.local/state/sessionmesh" }
            let config = (try? absoluteEnvironment("XDG_CONFIG_HOME")).map { $0 + "/sessionmesh/meshd.toml" }
                ?? home.map { $0 + "/.config/sessionmesh/meshd.toml" }
            guard let state, let config else {
                throw ConfigurationError(key: "HOME", message: "neither XDG_STATE_HOME nor HOME is set; pass --state-dir and --config")
            }
            // Without a runtime folder (a root shell, a container), the socket lives in the state
            // folder, which the daemon creates 0700; meshctl looks there too.
            let socket = (try? absoluteEnvironment("XDG_RUNTIME_DIR")).map { $0 + "/sessionmesh/meshd.sock" }
                ?? state + "/meshd.sock"
            return Defaults(stateDirectory: state, socketPath: socket, configFile: config)
        }
    }

    /// Resolves the configuration for `mode` with `overrides`.
    ///
    /// Throws `ConfigurationError` naming the file, line and key for a bad file, the flag for a
    /// bad flag, and the missing file for a `--config` that does not exist.
    public func load(mode: Mode, overrides: Overrides) throws(ConfigurationError) -> DaemonConfiguration {
        // An empty path would resolve to the working directory (an unset shell variable in
        // `--state-dir "$STATE"` put the identity key and the queue wherever meshd was started).
        for (flag, value) in [("--state-dir", overrides.stateDirectory), ("--socket", overrides.socketPath),
                              ("--config", overrides.configFile)] where value?.isEmpty == true {
            throw ConfigurationError(key: flag, message: "is empty; give a path, or leave the flag out for the default")
        }
        let defaults = try defaults(for: mode)
        let file = try readConfigFile(overrides.configFile.map(absolute) ?? defaults.configFile,
                                      required: overrides.configFile != nil)

        let socket = overrides.socketPath.map(absolute) ?? file.socketPath ?? defaults.socketPath
        guard let socket else {
            throw ConfigurationError(key: "XDG_RUNTIME_DIR", message: "is not set, so there is no default socket path; pass --socket PATH or set 'socket' in the config file")
        }
        var configuration = DaemonConfiguration(
            stateDirectory: overrides.stateDirectory.map(absolute) ?? file.stateDirectory ?? defaults.stateDirectory,
            socketPath: socket)
        if let mode = file.socketMode { configuration.socketMode = mode }
        if let listen = file.listen { configuration.listen = listen }
        if let peers = file.staticPeers { configuration.staticPeers = peers }
        if let name = file.name { configuration.name = name }
        if let level = file.logLevel { configuration.logLevel = level }
        if let seconds = file.pairingCodeLifetime { configuration.pairingCodeLifetime = seconds }
        if let seconds = file.keepaliveInterval { configuration.keepaliveInterval = seconds }
        if let list = file.featureAllowList { configuration.featureAllowList = list }
        if let list = file.controlAllowList { configuration.controlAllowList = list }
        if let count = file.apiConnectionsPerUID { configuration.localAPIConnectionsPerUID = count }
        if let bytes = file.apiRequestBytesPerUID { configuration.localAPIRequestBytesPerUID = bytes }
        if let seconds = file.reachabilityLease { configuration.reachabilityLease = seconds }
        if let mdns = file.mdns { configuration.mdns = mdns }
        if let deviceSet = file.deviceSet { configuration.deviceSet = deviceSet }
        configuration.storeOptions = file.delivery.storeOptions(configuration.storeOptions)
        configuration.routerOptions = file.delivery.routerOptions(configuration.routerOptions)
        let relayURL = try overrides.relay.map { text throws(ConfigurationError) in
            try flag("--relay") { () throws(ConfigurationError) in try RelayURL(parsing: text) }
        }
        do {
            configuration.relay = try file.relay.settings(url: relayURL)
        } catch {
            throw ConfigurationError(file: error.key?.hasPrefix("-") == true ? nil : (overrides.configFile.map(absolute) ?? defaults.configFile),
                                     key: error.key, message: error.message)
        }
        try apply(overrides, to: &configuration)
        return configuration
    }

    private func apply(_ overrides: Overrides, to configuration: inout DaemonConfiguration) throws(ConfigurationError) {
        if let text = overrides.listen {
            configuration.listen = try flag("--listen") { () throws(ConfigurationError) in
                try DaemonConfiguration.Endpoint(parsing: text, allowPortZero: true)
            }
        }
        if !overrides.peers.isEmpty {
            var peers: [DaemonConfiguration.Endpoint] = []
            for text in overrides.peers {
                peers.append(try flag("--peer") { () throws(ConfigurationError) in try DaemonConfiguration.Endpoint(parsing: text) })
            }
            configuration.staticPeers = peers
        }
        if let name = overrides.name {
            if let problem = PairingIdentity.problem(withName: name) {
                throw ConfigurationError(key: "--name", message: "must be 1 to 64 bytes of printable UTF-8: \(problem)")
            }
            configuration.name = name
        }
        if let level = overrides.logLevel {
            guard ConfigFile.logLevels.contains(level) else {
                throw ConfigurationError(key: "--log-level", message: "'\(level)' is not a log level; use one of \(ConfigFile.logLevels.joined(separator: ", "))")
            }
            configuration.logLevel = level
        }
        if let offset = overrides.clockOffsetMilliseconds {
            // A skewed clock in a real daemon would make every peer's anchors and offsets wrong.
            guard !testOptionsNeedTestRun || environment[Self.testRunVariable] == "1" else {
                throw ConfigurationError(key: "--clock-offset-ms",
                                         message: "is for tests only; a release build takes it only when the environment sets \(Self.testRunVariable)=1")
            }
            // The skew is applied in nanoseconds to the wall clock: keep it where that arithmetic
            // cannot wrap (a wrapped clock would look sane and be wildly wrong).
            guard (-Self.maximumClockOffsetMilliseconds...Self.maximumClockOffsetMilliseconds).contains(offset) else {
                throw ConfigurationError(key: "--clock-offset-ms",
                                         message: "\(offset) is out of range; use -\(Self.maximumClockOffsetMilliseconds) to \(Self.maximumClockOffsetMilliseconds) (10 years)")
            }
            configuration.clockOffsetMilliseconds = offset
        }
        if overrides.noMDNS { configuration.mdns = false }
    }

    private func flag<T>(_ name: String, _ body: () throws(ConfigurationError) -> T) throws(ConfigurationError) -> T {
        do { return try body() } catch { throw ConfigurationError(key: name, message: error.message) }
    }

    private func readConfigFile(_ path: String, required: Bool) throws(ConfigurationError) -> ConfigFile {
        let text: String?
        do {
            text = try readFile(path)
        } catch let error as ConfigurationError {
            throw error
        } catch {
            throw ConfigurationError(file: path, message: "cannot read the config file: \(error.localizedDescription)")
        }
        guard let text else {
            if required { throw ConfigurationError(file: path, key: "--config", message: "the config file does not exist") }
            return ConfigFile()
        }
        return try ConfigFile(parsing: text, fileName: path)
    }

    private func absolute(_ path: String) -> String {
        path.hasPrefix("/") ? path : (workingDirectory as NSString).appendingPathComponent(path)
    }

    private func absoluteEnvironment(_ name: String) throws(ConfigurationError) -> String? {
        guard let value = environment[name], !value.isEmpty else { return nil }
        guard value.hasPrefix("/") else { throw ConfigurationError(key: name, message: "'\(value)' is not an absolute path") }
        return value
    }

    /// The largest `--clock-offset-ms` accepted: 10 years.
    public static let maximumClockOffsetMilliseconds: Int64 = 10 * 366 * 86_400_000

    /// Reads a UTF-8 config file (at most 1 MiB); nil when it does not exist. Throws a
    /// `ConfigurationError` naming the file for a folder, FIFO, socket, non-UTF-8 or huge file.
    public static func readFileIfPresent(_ path: String) throws -> String? {
        try ConfigFileReader.read(path)
    }
}
