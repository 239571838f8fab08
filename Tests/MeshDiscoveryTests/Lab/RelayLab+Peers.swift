import Foundation

/// Two paired daemons in the relay lab, and the path their channel takes.
extension RelayLab {
    /// A's address on the direct link (`scripts/lab/direct`).
    static let directAddressA = "198.19.0.1"

    /// The two daemons of a scenario, paired, with a channel through the broker.
    struct Pair: Sendable {
        var deviceA: String
        var deviceB: String
        /// How many lines the observers had printed when the direct link went away.
        var observedAtStart: Int
    }

    /// Starts A and B (new identities) with their relay accounts, pairs them by code over a direct link that is
    /// then removed, and waits until both report the channel active on the relay path.
    func pairOverRelay() async throws -> Pair {
        // Fresh devices: an earlier scenario's state (its pairing) is gone.
        for host in [Self.a, Self.b] { try? FileManager.default.removeItem(atPath: session.directory + "/h\(host)/state") }
        try await startDaemon(Self.a, relay: .account(of: Self.a))
        try await startDaemon(Self.b, relay: .account(of: Self.b))
        try await session.run("direct", ["up"])
        let (code, waiting) = try await meshd.showCode(Self.a)
        let joined = try await meshd.meshctl(Self.b, ["pair", code, "--json", "--address", "\(Self.directAddressA):\(MeshdLab.port)"])
        guard joined.status == 0 else {
            waiting.terminate()
            throw LabError("meshctl pair on B failed (\(joined.status)): \(joined.output) \(joined.errors)")
        }
        guard await waiting.waitForExit(timeout: .seconds(10)) == 0 else {
            waiting.terminate()
            throw LabError("A's meshctl pair did not report success: \(waiting.output.map(\.text)) \(waiting.errorOutput)")
        }
        let deviceA = try await meshd.status(Self.a).deviceID, deviceB = try await meshd.status(Self.b).deviceID
        try await session.run("direct", ["down"])
        guard try await !ping(from: Self.a, "198.19.0.2") else { throw LabError("A still reaches B's direct address") }
        let observedAtStart = observed.count
        try await awaitPath(containing: "relay", timeout: .seconds(15))
        return Pair(deviceA: deviceA, deviceB: deviceB, observedAtStart: observedAtStart)
    }

    /// The `path` host `host` reports for its peer `name` (`meshctl peers --json`), with its
    /// channel state, or nil when the peer is not listed.
    func path(_ host: Int, peer name: String) async throws -> (path: String, channel: String)? {
        let result = try await meshd.meshctl(host, ["peers", "--json"], timeout: .seconds(5))
        guard result.status == 0 else { throw LabError("meshctl peers on host \(host) failed: \(result.errors)") }
        guard let peers = try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [[String: Any]],
              let peer = peers.first(where: { $0["name"] as? String == name }) else { return nil }
        let path: String
        switch peer["path"] {
        case let text as String: path = text
        case let value?: path = String(describing: value)
        case nil: path = ""
        }
        return (path, peer["channel"] as? String ?? "")
    }

    /// Waits (≤ `timeout`) until A and B both show their channel to each other active on a path
    /// whose description contains `word` (or, with `excluding`, does not).
    @discardableResult
    func awaitPath(containing word: String, excluding: Bool = false, timeout: Duration) async throws -> ContinuousClock.Instant {
        try await meshd.waitUntil("A and B active on a path \(excluding ? "without" : "with") '\(word)'", timeout: timeout) {
            for (host, name) in [(Self.a, "host-b"), (Self.b, "host-a")] {
                guard let seen = try await path(host, peer: name), seen.channel == "active",
                      seen.path.contains(word) != excluding else { return false }
            }
            return true
        }
    }
}
