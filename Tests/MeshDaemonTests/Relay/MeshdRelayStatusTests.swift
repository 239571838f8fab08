import Foundation
import Testing

/// `meshd --relay URL` against a real Mosquitto the test starts: `meshctl status` says in words
/// whether the daemon is connected to its broker, why not (a refused account, a broker gone),
/// and that it connects again by itself when the broker is back.
@Suite("meshd relay broker status", .enabled(if: ChildProcess.executable("meshd") != nil && MosquittoBroker.shouldRun))
struct MeshdRelayStatusTests {
    /// The daemon's `relay` status object, once `state` is `expected` (nil after 15 s).
    private static func relayState(_ daemon: DaemonProcess, becomes expected: String) async throws -> [String: Any]? {
        var last: [String: Any]?
        do {
            return try await eventually("relay state \(expected)", timeout: 15) {
                let relay = try await daemon.status()["relay"] as? [String: Any]
                last = relay
                return relay?["state"] as? String == expected ? relay : nil
            }
        } catch is TimedOut {
            Issue.record("relay state did not become \(expected); last: \(String(describing: last))")
            return nil
        }
    }

    @Test func statusSaysConnectedUnreachableWhileTheBrokerIsDownAndConnectedAgainAfter() async throws {
        let folder = try TemporaryFolder.make()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let broker = try MosquittoBroker(folder: folder, accounts: ["devA": "secret-a"])
        defer { broker.stop() }
        let passwordFile = folder + "/relay.password"
        FileManager.default.createFile(atPath: passwordFile, contents: Data("secret-a\n".utf8), attributes: [.posixPermissions: 0o600])
        let config = folder + "/meshd.toml"
        try "relay_password_file = \"\(passwordFile)\"\n".write(toFile: config, atomically: true, encoding: .utf8)
        let daemon = try await DaemonProcess(name: "relay-a", extraArguments: [
            "--no-mdns", "--config", config, "--relay", "mqtt://devA@127.0.0.1:\(broker.port)",
        ])
        defer { daemon.stopNow() }

        let up = try #require(try await Self.relayState(daemon, becomes: "connected"))
        #expect(up["url"] as? String == "mqtt://devA@127.0.0.1:\(broker.port)")
        #expect(up["host"] as? String == "127.0.0.1")
        #expect(up["mqtt"] as? String == "MQTT 5")
        let text = try await daemon.meshctl(["status"])
        #expect(text.output.contains("connected: mqtt://devA@127.0.0.1:\(broker.port) (MQTT 5)"), "\(text.output)")

        broker.stop()
        let down = try #require(try await Self.relayState(daemon, becomes: "unreachable"))
        #expect((down["detail"] as? String)?.contains("127.0.0.1:\(broker.port)") == true, "\(down)")

        try broker.start()
        _ = try await Self.relayState(daemon, becomes: "connected")
    }

    @Test func aWrongPasswordInTheURLIsAuthRefused() async throws {
        let folder = try TemporaryFolder.make()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let broker = try MosquittoBroker(folder: folder, accounts: ["devA": "secret-a"])
        defer { broker.stop() }
        let daemon = try await DaemonProcess(name: "relay-b", extraArguments: [
            "--no-mdns", "--relay", "mqtt://devA:wrong-password@127.0.0.1:\(broker.port)",
        ])
        defer { daemon.stopNow() }
        let refused = try #require(try await Self.relayState(daemon, becomes: "auth refused"))
        #expect(refused["url"] as? String == "mqtt://devA@127.0.0.1:\(broker.port)")
        let json = String(decoding: try JSONSerialization.data(withJSONObject: refused), as: UTF8.self)
        #expect(!json.contains("wrong-password"))
        let text = try await daemon.meshctl(["status"])
        #expect(text.output.contains("auth refused"), "\(text.output)")
    }
}
