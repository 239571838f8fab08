/// The relay broker as `meshctl status` shows it: which broker, whether the daemon is connected
/// to it and, when not, why in words.
public struct RelayStatus: Codable, Sendable, Equatable {
    /// The broker's URL without a password (`mqtts://devA@broker.example:8883`).
    public var url: String
    /// The broker's host name or address (what `meshctl peers` shows next to `relay`).
    public var host: String
    /// `connected`, `connecting`, `auth refused`, `TLS failed`, `unreachable`, `protocol refused`
    /// or `refused`.
    public var state: String
    /// What happened, for a state other than `connected` (e.g. "connection refused by
    /// broker.example:8883; is the broker running on that port?").
    public var detail: String?
    /// The MQTT version of the connection (`MQTT 5`, `MQTT 3.1.1`) while connected.
    public var mqtt: String?
    /// When the state began (seconds since 1970).
    public var since: Double?
    /// Seconds until the next connection attempt, while waiting to retry.
    public var retryInSeconds: Double?

    /// Creates a relay status value.
    public init(url: String, host: String, state: String, detail: String? = nil, mqtt: String? = nil,
                since: Double? = nil, retryInSeconds: Double? = nil) {
        self.url = url
        self.host = host
        self.state = state
        self.detail = detail
        self.mqtt = mqtt
        self.since = since
        self.retryInSeconds = retryInSeconds
    }
}
