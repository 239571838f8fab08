/// The settings a `meshd.toml` file gives, checked key by key (docs/CONFIG.md lists them).
///
/// Every field is optional: only what the file sets is applied over the defaults.
public struct ConfigFile: Sendable, Equatable {
    /// `name`.
    public var name: String?
    /// `state_dir`.
    public var stateDirectory: String?
    /// `socket`.
    public var socketPath: String?
    /// `socket_mode`.
    public var socketMode: UInt16?
    /// `listen`.
    public var listen: DaemonConfiguration.Endpoint?
    /// `peers`.
    public var staticPeers: [DaemonConfiguration.Endpoint]?
    /// `log_level`.
    public var logLevel: String?
    /// `pairing_code_lifetime`, seconds.
    public var pairingCodeLifetime: Double?
    /// `keepalive_interval`, seconds.
    public var keepaliveInterval: Double?
    /// `reachability_lease`, seconds.
    public var reachabilityLease: Double?
    /// `mdns`: publish and browse over mDNS (default true).
    public var mdns: Bool?
    /// `device_set`: pairing joins the device set, and the set's records are kept (default true).
    public var deviceSet: Bool?
    /// `feature_allow`: per-uid feature allow-list.
    public var featureAllowList: FeatureAllowList?
    /// `control_allow`: uids and groups that may pair and unpair besides root and the daemon's user.
    public var controlAllowList: ControlAllowList?
    /// `api_max_connections_per_uid`.
    public var apiConnectionsPerUID: Int?
    /// `api_max_request_bytes_per_uid`.
    public var apiRequestBytesPerUID: Int?
    /// Store limits, durability and the pre-activation buffer (`outbox_max_items_per_peer` …).
    public var delivery = DeliveryLimitsConfig()
    /// The relay's broker, password file, CA file and topic prefix (`relay`, `relay_*`).
    public var relay = RelayConfig()

    /// Every key the file may contain.
    public static let knownKeys = ["name", "state_dir", "socket", "socket_mode", "listen", "peers", "log_level",
                                   "pairing_code_lifetime", "keepalive_interval", "reachability_lease", "feature_allow", "control_allow", "mdns",
                                   "device_set",
                                   "api_max_connections_per_uid", "api_max_request_bytes_per_uid"]
        + DeliveryLimitsConfig.keys + RelayConfig.keys
    /// Accepted `log_level` values.
    public static let logLevels = ["trace", "debug", "info", "notice", "warning", "error", "critical"]

    /// An empty file.
    public init() {}

    /// Parses and checks `text`; errors name `fileName`, the line and the key.
    public init(parsing text: String, fileName: String) throws(ConfigurationError) {
        self.init()
        var lines: [String: Int] = [:]
        for entry in try ConfigFileParser(fileName: fileName).parse(text) {
            lines[entry.key] = entry.line
            do throws(ConfigurationError) {
                try apply(entry)
            } catch {
                throw ConfigurationError(file: fileName, line: entry.line, key: entry.key, message: error.message)
            }
        }
        if let lease = reachabilityLease, let interval = keepaliveInterval, lease <= interval {
            throw ConfigurationError(file: fileName, line: lines["reachability_lease"], key: "reachability_lease",
                                     message: "must be longer than keepalive_interval (\(interval) s)")
        }
        if let (key, message) = delivery.conflict() {
            throw ConfigurationError(file: fileName, line: lines[key], key: key, message: message)
        }
    }

    private mutating func apply(_ entry: ConfigFileParser.Entry) throws(ConfigurationError) {
        let value = entry.value
        switch entry.key {
        case "name":
            let text = try string(value)
            // The rule pairing applies when it sends the name (1–64 bytes of UTF-8, no control
            // or bidi-override characters), so a name accepted here never fails pairing later.
            if let problem = PairingIdentity.problem(withName: text) {
                throw ConfigurationError(message: "must be 1 to 64 bytes of printable UTF-8: \(problem)")
            }
            name = text
        case "state_dir":
            stateDirectory = try absolutePath(value)
        case "socket":
            socketPath = try absolutePath(value)
        case "socket_mode":
            socketMode = try Self.socketMode(value)
        case "listen":
            listen = try DaemonConfiguration.Endpoint(parsing: try string(value), allowPortZero: true)
        case "peers":
            guard case .array(let items) = value else {
                throw ConfigurationError(message: "must be an array of \"HOST:PORT\" strings, got \(value.typeName)")
            }
            var peers: [DaemonConfiguration.Endpoint] = []
            for item in items { peers.append(try DaemonConfiguration.Endpoint(parsing: try string(item))) }
            staticPeers = peers
        case "log_level":
            let level = try string(value)
            guard Self.logLevels.contains(level) else {
                throw ConfigurationError(message: "'\(level)' is not a log level; use one of \(Self.logLevels.joined(separator: ", "))")
            }
            logLevel = level
        case "pairing_code_lifetime":
            pairingCodeLifetime = try seconds(value, in: 10...3600)
        case "keepalive_interval":
            keepaliveInterval = try seconds(value, in: 0.05...60)
        case "reachability_lease":
            reachabilityLease = try seconds(value, in: 0.1...600)
        case "mdns":
            guard case .boolean(let flag) = value else {
                throw ConfigurationError(message: "must be true or false, got \(value.typeName)")
            }
            mdns = flag
        case "device_set":
            guard case .boolean(let flag) = value else {
                throw ConfigurationError(message: "must be true or false, got \(value.typeName)")
            }
            deviceSet = flag
        case "feature_allow":
            guard case .array(let items) = value else {
                throw ConfigurationError(message: "must be an array of \"UID:FEATURE\" strings, got \(value.typeName)")
            }
            var texts: [String] = []
            for item in items { texts.append(try string(item)) }
            featureAllowList = try FeatureAllowList(parsing: texts)
        case "control_allow":
            guard case .array(let items) = value else {
                throw ConfigurationError(message: "must be an array of \"UID\" or \"@GROUP\" strings, got \(value.typeName)")
            }
            var texts: [String] = []
            for item in items { texts.append(try string(item)) }
            controlAllowList = try ControlAllowList(parsing: texts)
        case "api_max_connections_per_uid":
            apiConnectionsPerUID = try integer(value, in: 1...LocalAPIServer.Limits().maximumConnections, "connections")
        case "api_max_request_bytes_per_uid":
            apiRequestBytesPerUID = try integer(value, in: (1 << 20)...(1 << 30), "bytes")
        default:
            if try delivery.apply(key: entry.key, value: value) { return }
            guard try relay.apply(key: entry.key, value: value) else {
                throw ConfigurationError(message: "unknown key; known keys: \(Self.knownKeys.joined(separator: ", "))")
            }
        }
    }

    private func string(_ value: ConfigFileParser.Value) throws(ConfigurationError) -> String {
        guard case .string(let text) = value else {
            throw ConfigurationError(message: "must be a quoted string, got \(value.typeName)")
        }
        return text
    }

    private func integer(_ value: ConfigFileParser.Value, in range: ClosedRange<Int>, _ unit: String) throws(ConfigurationError) -> Int {
        guard case .integer(let number) = value else {
            throw ConfigurationError(message: "must be an integer number of \(unit) (e.g. \(range.lowerBound)), got \(value.typeName)")
        }
        guard number >= Int64(range.lowerBound), number <= Int64(range.upperBound) else {
            throw ConfigurationError(message: "\(number) is out of range; use \(range.lowerBound) to \(range.upperBound) \(unit)")
        }
        return Int(number)
    }

    private func absolutePath(_ value: ConfigFileParser.Value) throws(ConfigurationError) -> String {
        let path = try string(value)
        guard path.hasPrefix("/") else { throw ConfigurationError(message: "'\(path)' must be an absolute path") }
        return path
    }

    private func seconds(_ value: ConfigFileParser.Value, in range: ClosedRange<Double>) throws(ConfigurationError) -> Double {
        let number: Double
        switch value {
        case .integer(let n): number = Double(n)
        case .float(let f): number = f
        default: throw ConfigurationError(message: "must be a number of seconds, got \(value.typeName)")
        }
        guard range.contains(number) else {
            throw ConfigurationError(message: "\(number) is out of range; use \(range.lowerBound) to \(range.upperBound) seconds")
        }
        return number
    }

    /// Reads a socket mode: an integer (`0o600`) or an octal string (`"0600"`, `"660"`). Owner
    /// read+write is required; bits for others are refused.
    public static func socketMode(_ value: ConfigFileParser.Value) throws(ConfigurationError) -> UInt16 {
        let mode: Int64
        switch value {
        case .integer(let n):
            guard n <= 0o777 else {
                throw ConfigurationError(message: "\(n) is not a mode; write octal as 0o600 or \"0600\" (a bare 600 is decimal)")
            }
            mode = n
        case .string(let text):
            let digits = text.hasPrefix("0o") ? String(text.dropFirst(2)) : text
            guard !digits.isEmpty, let n = Int64(digits, radix: 8) else {
                throw ConfigurationError(message: "'\(text)' is not an octal mode; write 0o600 or \"0600\"")
            }
            mode = n
        default:
            throw ConfigurationError(message: "must be an octal mode such as 0o600 or \"0660\", got \(value.typeName)")
        }
        guard (0...0o777).contains(mode), mode & 0o600 == 0o600, mode & 0o007 == 0 else {
            throw ConfigurationError(message: "mode \(String(mode, radix: 8)) is not allowed; the owner needs read+write and others no access (0600 or 0660)")
        }
        return UInt16(mode)
    }
}
