import Foundation

/// `meshd` in the relay lab's hosts, configured with a relay broker.
extension RelayLab {
    /// How a daemon reaches the broker: its account, and what the test changes to break it.
    struct Relay: Sendable {
        var user: String
        var scheme = "mqtts"
        var port = RelayLab.tlsPort
        /// A file of the broker's folder, or nil for the system's CAs.
        var caFile: String? = "ca.crt"
        /// The password the daemon is given (nil: the account's own).
        var password: String?
        var topicPrefix: String?

        /// Host `host`'s own account (devA for A, devB for B) over TLS with the lab CA.
        static func account(of host: Int) -> Relay { Relay(user: host == RelayLab.a ? "devA" : "devB") }
    }

    /// What `meshctl status --json` says about the broker.
    struct RelayState: Decodable, Sendable {
        var url: String
        var host: String
        var state: String
        var detail: String?
        var mqtt: String?
    }

    private struct StatusWithRelay: Decodable {
        var relay: RelayState?
    }

    /// The relay URL a daemon in `host` is given.
    static func url(_ relay: Relay) -> String {
        "\(relay.scheme)://\(relay.user)@\(brokerAddress):\(relay.port)"
    }

    /// Writes host `host`'s `meshd.toml` (the lab's short timers and `relay`), with the
    /// password in a 0600 file of the host's own, and starts its daemon (awaiting `READY=1`).
    @discardableResult
    func startDaemon(_ host: Int, relay: Relay, extra: [String] = []) async throws -> ChildProcess {
        let folder = session.directory + "/h\(host)"
        let passwordFile = folder + "/relay.password"
        let password = try relay.password ?? self.password(relay.user)
        FileManager.default.createFile(atPath: passwordFile, contents: Data(password.utf8),
                                       attributes: [.posixPermissions: 0o600])
        var lines = ["keepalive_interval = 0.5", "reachability_lease = 2",
                     "relay = \"\(Self.url(relay))\"", "relay_password_file = \"\(passwordFile)\""]
        if let caFile = relay.caFile, relay.scheme == "mqtts" { lines.append("relay_ca_file = \"\(brokerFile(caFile))\"") }
        if let prefix = relay.topicPrefix { lines.append("relay_topic_prefix = \"\(prefix)\"") }
        try (lines.joined(separator: "\n") + "\n").write(toFile: folder + "/meshd.toml", atomically: true, encoding: .utf8)
        return try await meshd.start(host, extra: extra)
    }

    /// The broker as host `host`'s `meshctl status --json` reports it (nil: no relay configured).
    func relayState(_ host: Int) async throws -> RelayState? {
        let result = try await meshd.meshctl(host, ["status", "--json"], timeout: .seconds(5))
        guard result.status == 0 else { throw LabError("meshctl status on host \(host) failed: \(result.errors)") }
        return try JSONDecoder().decode(StatusWithRelay.self, from: Data(result.output.utf8)).relay
    }

    /// Waits (≤ `timeout`) until host `host` reports the broker in `state`; returns that report.
    @discardableResult
    func awaitRelayState(_ host: Int, _ state: String, timeout: Duration = .seconds(10)) async throws -> RelayState {
        var last: RelayState?
        do {
            try await meshd.waitUntil("host \(host) reporting the broker \(state)", timeout: timeout) {
                last = try await relayState(host)
                return last?.state == state
            }
        } catch {
            throw LabError("\(error); last report: \(last.map { "\($0.state) \($0.detail ?? "")" } ?? "none")")
        }
        guard let last else { throw LabError("no relay report from host \(host)") }
        return last
    }

    /// `meshctl status` (the words a user reads) of host `host`.
    func statusText(_ host: Int) async throws -> String {
        let result = try await meshd.meshctl(host, ["status"], timeout: .seconds(5))
        guard result.status == 0 else { throw LabError("meshctl status on host \(host) failed: \(result.errors)") }
        return result.output
    }
}
