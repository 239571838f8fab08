import Foundation

/// The resolved settings a daemon runs with: defaults, then the config file, then flags.
///
/// `meshd` builds one from its command line and config file; tests build one directly to run
/// several daemons in one process. Paths are absolute once resolved.
public struct DaemonConfiguration: Sendable, Equatable {
    /// A `HOST:PORT` pair. `host` is a literal IPv4/IPv6 address or a name to resolve.
    public struct Endpoint: Sendable, Equatable, Hashable, CustomStringConvertible {
        /// Host part, without brackets for IPv6.
        public var host: String
        /// Port number.
        public var port: Int

        /// Creates an endpoint.
        public init(host: String, port: Int) {
            self.host = host
            self.port = port
        }

        /// `HOST:PORT`, with brackets around an IPv6 host.
        public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
    }

    /// This device's human name, shown to peers while pairing.
    public var name: String
    /// Folder for the identity key, paired devices and queues (mode 0700).
    public var stateDirectory: String
    /// Local API socket path.
    public var socketPath: String
    /// Permission bits of the local API socket (0o600, or 0o660 for a group).
    public var socketMode: UInt16
    /// Where UDP and TCP listen (same port for both). Port 0 picks a free port (tests).
    public var listen: Endpoint
    /// Static peer addresses, tried in addition to discovery.
    public var staticPeers: [Endpoint]
    /// Test-only skew of this daemon's wall clock, in milliseconds (`--clock-offset-ms`).
    public var clockOffsetMilliseconds: Int64
    /// Default lifetime of a pairing code, in seconds.
    public var pairingCodeLifetime: Double
    /// Interval between keepalives on an active channel, in seconds.
    public var keepaliveInterval: Double
    /// How long reachability lasts without a keepalive, in seconds.
    public var reachabilityLease: Double
    /// Log level name (`trace` … `critical`).
    public var logLevel: String
    /// Whether to publish and browse over mDNS (Avahi). `false` (`mdns = false`, `--no-mdns`):
    /// only static peers and known addresses are used, nothing is announced on the network.
    public var mdns = true
    /// Whether pairing makes a device a member of the whole device set (`device_set`, default
    /// true). `false`: every pairing is between two devices only, as with `meshctl pair --single`;
    /// records other members send are not kept.
    public var deviceSet = true
    /// Channel timers and limits (rekey, handshake deadlines, rate limits); defaults suit
    /// production, tests shorten them.
    public var channelTuning = ChannelTuning()
    /// Per-uid feature allow-list for the local API's data operations; nil = no restriction.
    public var featureAllowList: FeatureAllowList?
    /// Uids and groups that may pair and unpair over the local API besides root and the
    /// daemon's own user (`control_allow`); empty = only those two.
    public var controlAllowList = ControlAllowList()
    /// Open local API connections per uid (`api_max_connections_per_uid`).
    public var localAPIConnectionsPerUID = LocalAPIServer.Limits().maximumConnectionsPerUID
    /// Body bytes of running local API requests per uid (`api_max_request_bytes_per_uid`).
    public var localAPIRequestBytesPerUID = LocalAPIServer.Limits().maximumInFlightBytesPerUID
    /// Limits and durability of the delivery store (`delivery.sqlite`); the config file's
    /// `outbox_*`, `inbox_*`, `dedup_horizon_per_peer` and `store_*` keys set them.
    public var storeOptions = DeliveryStoreOptions()
    /// Delivery router tuning; the config file's `pending_max_items` sets the pre-activation buffer.
    public var routerOptions = DeliveryRouterOptions()
    /// The MQTT broker to relay through when no direct path works (`relay`, `--relay`); nil: none.
    public var relay: RelaySettings?

    /// Default UDP/TCP port.
    public static let defaultPort = 47_470

    /// Creates a configuration; every value but the three paths has a default.
    public init(name: String = DaemonConfiguration.defaultName(),
                stateDirectory: String,
                socketPath: String,
                socketMode: UInt16 = 0o600,
                listen: Endpoint = Endpoint(host: "0.0.0.0", port: DaemonConfiguration.defaultPort),
                staticPeers: [Endpoint] = [],
                clockOffsetMilliseconds: Int64 = 0,
                pairingCodeLifetime: Double = 300,
                keepaliveInterval: Double = 1,
                reachabilityLease: Double = 4,
                logLevel: String = "info") {
        self.name = name
        self.stateDirectory = stateDirectory
        self.socketPath = socketPath
        self.socketMode = socketMode
        self.listen = listen
        self.staticPeers = staticPeers
        self.clockOffsetMilliseconds = clockOffsetMilliseconds
        self.pairingCodeLifetime = pairingCodeLifetime
        self.keepaliveInterval = keepaliveInterval
        self.reachabilityLease = reachabilityLease
        self.logLevel = logLevel
    }

    /// The host name of this machine, used when no name is configured.
    public static func defaultName() -> String {
        ProcessInfo.processInfo.hostName.split(separator: ".").first.map(String.init) ?? "sessionmesh"
    }
}
