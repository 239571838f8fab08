import Foundation
import Testing

/// `meshctl queue --inbox` lists what waits for an app here, `meshctl queue drop ID` drops it.
@Suite("meshctl queue --inbox and drop", .serialized,
       .enabled(if: ChildProcess.executable("meshd") != nil && ChildProcess.executable("meshctl") != nil,
                "meshd/meshctl are not built (run `swift build` first)"))
struct MeshctlInboxQueueTests {
    @Test func aReceivedItemIsListedAndDroppedOnce() async throws {
        let pair = try await DaemonPair.start()
        defer { pair.stopNow() }
        let state = try TemporaryFolder.make()
        defer { try? FileManager.default.removeItem(atPath: state) }
        let sent = try await pair.b.meshctl(["send", "--feature", "nobody", "--session", UUID().uuidString, "waiting"])
        #expect(sent.status == 0, "\(sent.output)")
        let item = try await eventually("A's inbox holds B's item", timeout: 10) { () -> [String: Any]? in
            let listed = try await pair.a.meshctl(["queue", "--inbox", "--json"])
            let object = try JSONSerialization.jsonObject(with: Data(listed.output.utf8)) as? [String: Any]
            return (object?["items"] as? [[String: Any]])?.first
        }
        #expect(item["featureID"] as? String == "nobody")
        #expect(item["peer"] as? String == pair.idB)
        #expect(item["deliveries"] as? Int == 0)
        #expect(item["size"] as? Int ?? 0 > 0)
        let id = try #require(item["id"] as? Int)
        let plain = try await pair.a.meshctl(["queue", "--inbox"])
        #expect(plain.output.contains("nobody") && plain.output.contains("DELIVERIES"), "\(plain.output)")

        let dropped = try await pair.a.meshctl(["queue", "drop", String(id)])
        #expect(dropped.status == 0 && dropped.output.contains("dropped inbox item \(id)"), "\(dropped.output)")
        let empty = try await pair.a.meshctl(["queue", "--inbox"])
        #expect(empty.output.contains("nothing waiting for an app"), "\(empty.output)")
        let again = try await pair.a.meshctl(["queue", "drop", String(id), "--json"])
        #expect(again.status == 1 && again.output.contains("not-found"), "\(again.output)")
        let bad = try await pair.a.meshctl(["queue", "drop", "-1"])
        #expect(bad.status == 2, "\(bad.output)")
    }

    /// `meshctl send` without `--session`: one random session per device and feature, kept in
    /// `$XDG_STATE_HOME/sessionmesh/meshctl-sessions.json` (0600).
    @Test func sendKeepsOneRandomSessionPerDeviceAndFeature() async throws {
        let pair = try await DaemonPair.start()
        defer { pair.stopNow() }
        var sessions: [String: [String]] = [:]
        for feature in ["one", "two"] {
            let watch = try WatchProcess(pair.b, feature: feature)
            defer { watch.stopNow() }
            _ = try await watch.next(type: "attached", timeout: 10)
            for text in ["first", "second"] {
                let sent = try await pair.a.meshctl(["send", "--feature", feature, text])
                #expect(sent.status == 0, "\(sent.output)")
                let event = try await watch.next(type: "envelope", timeout: 10)
                sessions[feature, default: []].append(event["sessionID"] as? String ?? "")
            }
        }
        let one = sessions["one"] ?? [], two = sessions["two"] ?? []
        #expect(one.count == 2 && Set(one).count == 1, "successive sends share one session: \(one)")
        #expect(two.count == 2 && Set(two).count == 1, "\(two)")
        #expect(one.first != two.first, "each feature has its own")
        let file = pair.a.folder + "/meshctl-state/sessionmesh/meshctl-sessions.json"
        let mode = try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int
        #expect(mode == 0o600)
    }
}
