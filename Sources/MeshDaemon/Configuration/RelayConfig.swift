/// The `meshd.toml` keys of the relay (docs/CONFIG.md, "Relay"): `relay`, `relay_password_file`,
/// `relay_ca_file`, `relay_topic_prefix`. What a file sets, checked key by key.
public struct RelayConfig: Sendable, Equatable {
    /// `relay`: the broker's URL.
    public var url: RelayURL?
    /// `relay_password_file`.
    public var passwordFile: String?
    /// `relay_ca_file`.
    public var caFile: String?
    /// `relay_topic_prefix`.
    public var topicPrefix: String?

    /// The keys this type reads.
    public static let keys = ["relay", "relay_password_file", "relay_ca_file", "relay_topic_prefix"]

    /// Nothing set.
    public init() {}

    /// Reads `key` if it is one of ``keys``; returns false for another key. Throws a
    /// `ConfigurationError` (message only; the caller adds file, line and key) for a bad value.
    mutating func apply(key: String, value: ConfigFileParser.Value) throws(ConfigurationError) -> Bool {
        guard Self.keys.contains(key) else { return false }
        guard case .string(let text) = value else {
            throw ConfigurationError(message: "must be a quoted string, got \(value.typeName)")
        }
        switch key {
        case "relay": url = try RelayURL(parsing: text)
        case "relay_password_file": passwordFile = try Self.absolutePath(text)
        case "relay_ca_file": caFile = try Self.absolutePath(text)
        default: topicPrefix = try RelaySettings.checkedPrefix(text)
        }
        return true
    }

    /// The settings the daemon runs with, or nil without a `relay` URL; `url` from `--relay`
    /// wins over the file's. The other keys without a URL are an error (they would do nothing).
    func settings(url flagURL: RelayURL?) throws(ConfigurationError) -> RelaySettings? {
        guard let url = flagURL ?? url else {
            if let key = [("relay_password_file", passwordFile), ("relay_ca_file", caFile), ("relay_topic_prefix", topicPrefix)]
                .first(where: { $0.1 != nil })?.0 {
                throw ConfigurationError(key: key, message: "is set but 'relay' is not; give the broker as relay = \"mqtts://USER@HOST:8883\"")
            }
            return nil
        }
        if caFile != nil, !url.useTLS {
            throw ConfigurationError(key: "relay_ca_file", message: "is set but the relay URL is mqtt:// (no TLS); use mqtts://")
        }
        return RelaySettings(url: url, passwordFile: passwordFile, caFile: caFile,
                             topicPrefix: topicPrefix ?? RelaySettings.defaultTopicPrefix)
    }

    private static func absolutePath(_ path: String) throws(ConfigurationError) -> String {
        guard path.hasPrefix("/") else { throw ConfigurationError(message: "'\(path)' must be an absolute path") }
        return path
    }
}

/// The relay a daemon runs with (`DaemonConfiguration.relay`): the broker, the files with its
/// password and CA, the prefix of every topic.
public struct RelaySettings: Sendable, Equatable {
    /// The broker.
    public var url: RelayURL
    /// The file holding the account's password (mode 0600, the daemon's user), if any.
    public var passwordFile: String?
    /// PEM CA file for the broker's certificate; nil: the system's CAs.
    public var caFile: String?
    /// Every topic the daemon uses starts with this.
    public var topicPrefix: String

    /// `sessionmesh/`.
    public static let defaultTopicPrefix = "sessionmesh/"

    /// Creates settings.
    public init(url: RelayURL, passwordFile: String? = nil, caFile: String? = nil, topicPrefix: String = RelaySettings.defaultTopicPrefix) {
        self.url = url
        self.passwordFile = passwordFile
        self.caFile = caFile
        self.topicPrefix = topicPrefix
    }

    /// The prefix checked by ``RelayTopicPrefix`` (the one rule for it): 1–64 printable ASCII
    /// characters ending in `/`, no space, `+`, `#` or leading `$`.
    static func checkedPrefix(_ text: String) throws(ConfigurationError) -> String {
        do {
            return try RelayTopicPrefix(text).text
        } catch {
            throw ConfigurationError(message: "'\(text)' is not a usable prefix: \(error.reason)")
        }
    }
}
