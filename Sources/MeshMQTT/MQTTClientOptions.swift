/// Where and how the client connects. The password is passed apart (``MQTTPassword``), so these
/// options can be logged and copied.
public struct MQTTClientOptions: Sendable, Equatable {
    /// Broker host name or address.
    public var host: String
    /// Broker TCP port.
    public var port: Int
    /// Whether to use TLS (`mqtts://`). The broker's certificate is always verified.
    public var useTLS: Bool
    /// PEM file of the CA(s) that sign the broker's certificate; nil: the system's CAs.
    public var caFile: String?
    /// Account name; nil connects without one.
    public var username: String?
    /// MQTT client identifier. It must not name the device (the broker is not trusted with that).
    public var clientID: String
    /// Keepalive interval, seconds: a silent broker is noticed after about 1.5 times it.
    public var keepaliveSeconds: Int
    /// How long a connection attempt (TCP, TLS, CONNACK) may take before it counts as unreachable.
    public var connectTimeoutSeconds: Double
    /// Messages with larger payloads are dropped on arrival (and counted).
    public var maximumPayloadBytes: Int
    /// Whether the broker forgets the session (subscriptions, queued QoS 1 messages) when the
    /// connection ends. False asks for a persistent session under `clientID`: with MQTT 3.1.1
    /// the broker keeps it until its own expiry (Mosquitto: `persistent_client_expiration`);
    /// under MQTT 5 libmosquitto's non-blocking connect sends no session expiry interval, so
    /// the session would end with the connection — offer 3.1.1 for a persistent session.
    public var cleanSession: Bool

    /// Creates options; `port` defaults to 8883 with TLS and 1883 without.
    public init(host: String, port: Int? = nil, useTLS: Bool, caFile: String? = nil,
                username: String? = nil, clientID: String, keepaliveSeconds: Int = 30,
                connectTimeoutSeconds: Double = 10, maximumPayloadBytes: Int = 70_000, cleanSession: Bool = true) {
        self.host = host
        self.port = port ?? (useTLS ? 8883 : 1883)
        self.useTLS = useTLS
        self.caFile = caFile
        self.username = username
        self.clientID = clientID
        self.keepaliveSeconds = max(5, min(keepaliveSeconds, 65_535))
        self.connectTimeoutSeconds = max(0.1, connectTimeoutSeconds)
        self.maximumPayloadBytes = max(1, maximumPayloadBytes)
        self.cleanSession = cleanSession
    }

    /// `HOST:PORT` (an IPv6 address in brackets), as status and logs show the broker.
    public var endpoint: String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }
}
