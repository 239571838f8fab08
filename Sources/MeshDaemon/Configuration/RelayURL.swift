import Foundation

/// The broker a daemon relays through: `mqtts://USER@HOST:8883` or `mqtt://USER@HOST:1883`
/// (`relay` in meshd.toml, `--relay URL`).
///
/// `mqtts://` is MQTT over TLS, port 8883 unless given; `mqtt://` is plain MQTT, port 1883.
/// The user name and a password may be percent-encoded. A password belongs in
/// `relay_password_file`; one written in the URL works, and the daemon warns that other local
/// users can read command lines.
public struct RelayURL: Sendable, Equatable, CustomStringConvertible {
    /// Whether TLS is used (`mqtts://`).
    public var useTLS: Bool
    /// Broker host name or address (IPv6 without brackets).
    public var host: String
    /// Broker port.
    public var port: Int
    /// Account name, if the URL gives one.
    public var username: String?
    /// A password written in the URL (`USER:PASSWORD@`): discouraged, see the type's summary.
    public var password: String?

    /// Parses `text`; the error message says what is wrong without echoing a password.
    public init(parsing text: String) throws(ConfigurationError) {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let rest: Substring
        if trimmed.lowercased().hasPrefix("mqtts://") {
            useTLS = true
            rest = trimmed.dropFirst("mqtts://".count)
        } else if trimmed.lowercased().hasPrefix("mqtt://") {
            useTLS = false
            rest = trimmed.dropFirst("mqtt://".count)
        } else {
            throw ConfigurationError(message: "must start with mqtts:// (MQTT over TLS) or mqtt://, e.g. mqtts://USER@broker.example:8883")
        }
        var authority = rest
        if authority.hasSuffix("/") { authority = authority.dropLast() }
        guard !authority.contains("/"), !authority.contains("?"), !authority.contains("#") else {
            throw ConfigurationError(message: "must be mqtts://USER@HOST[:PORT] with no path; the topics come from relay_topic_prefix")
        }
        if let at = authority.lastIndex(of: "@") {
            let userInfo = authority[..<at]
            authority = authority[authority.index(after: at)...]
            if let colon = userInfo.firstIndex(of: ":") {
                username = try Self.decode(userInfo[..<colon], "the user name")
                password = try Self.decode(userInfo[userInfo.index(after: colon)...], "the password")
            } else {
                username = try Self.decode(userInfo, "the user name")
            }
            if username?.isEmpty == true { username = nil }
        }
        let defaultPort = useTLS ? 8883 : 1883
        guard !authority.isEmpty else {
            throw ConfigurationError(message: "has no broker host; write mqtts://USER@HOST[:PORT]")
        }
        let endpoint: DaemonConfiguration.Endpoint
        let colons = authority.filter { $0 == ":" }.count
        if authority.hasPrefix("[") {
            endpoint = try DaemonConfiguration.Endpoint(parsing: authority.hasSuffix("]") ? "\(authority):\(defaultPort)" : String(authority))
        } else if colons > 1 {
            throw ConfigurationError(message: "an IPv6 broker address goes in brackets: mqtts://USER@[ADDR]:PORT")
        } else {
            endpoint = try DaemonConfiguration.Endpoint(parsing: colons == 1 ? String(authority) : "\(authority):\(defaultPort)")
        }
        host = endpoint.host
        port = endpoint.port
    }

    /// Creates a URL from its parts.
    public init(useTLS: Bool, host: String, port: Int? = nil, username: String? = nil, password: String? = nil) {
        self.useTLS = useTLS
        self.host = host
        self.port = port ?? (useTLS ? 8883 : 1883)
        self.username = username
        self.password = password
    }

    /// `HOST:PORT` (IPv6 in brackets).
    public var endpoint: String {
        DaemonConfiguration.Endpoint(host: host, port: port).description
    }

    /// The URL without its password, as status and logs may show it.
    public var description: String {
        let user = username.map { ($0.addingPercentEncoding(withAllowedCharacters: .urlUserAllowed) ?? $0) + "@" } ?? ""
        return "\(useTLS ? "mqtts" : "mqtt")://\(user)\(endpoint)"
    }

    private static func decode(_ part: Substring, _ what: String) throws(ConfigurationError) -> String {
        guard let text = String(part).removingPercentEncoding else {
            throw ConfigurationError(message: "\(what) has a broken %-escape")
        }
        guard !text.contains(where: { $0.isNewline || $0 == "\0" }) else {
            throw ConfigurationError(message: "\(what) contains a line break or NUL")
        }
        return text
    }
}
