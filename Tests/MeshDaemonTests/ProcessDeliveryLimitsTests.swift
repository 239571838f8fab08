#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MeshLocalAPI
import SessionMesh
import SessionMeshClient
import Testing

/// Store limits and the pre-activation buffer set in `meshd.toml`, seen through a real `meshd`.
@Suite("delivery limits from meshd.toml between meshd processes", .serialized,
       .enabled(if: ChildProcess.executable("meshd") != nil && ChildProcess.executable("meshctl") != nil,
                "meshd/meshctl are not built (run `swift build` first)"))
struct ProcessDeliveryLimitsTests {
    /// Writes `text` as a config file in a fresh temporary folder; returns the folder and the file.
    private func configFile(_ text: String) throws -> (folder: String, path: String) {
        let folder = try TemporaryFolder.make()
        let path = folder + "/meshd.toml"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return (folder, path)
    }

    /// `outbox_max_items_per_peer = 3`, B down: three reliable sends are queued, the fourth fails
    /// with `queue-full` naming the key to raise (also through `meshctl send`); the three stay
    /// listed by `queue` and reach B's app intact, once each, when B starts.
    @Test func aTinyOutboxLimitRefusesTheFourthSendAndKeepsTheThreeQueued() async throws {
        let config = try configFile("# tiny outbox for the test\noutbox_max_items_per_peer = 3\n")
        defer { try? FileManager.default.removeItem(atPath: config.folder) }
        let pair = try await DaemonPair.start(extraA: ["--config", config.path])
        defer { pair.stopNow() }
        try await pair.b.kill9()

        let client = try await MeshClient.connect(socketPath: pair.a.socketPath)
        for sequence in 1...3 {
            let reply = try await client.send(envelope: ProcessFixtures.envelope(UInt64(sequence), payload: "kept \(sequence)"),
                                              mode: .reliableEventually)
            #expect(reply.outcome == .queued)
        }
        do {
            _ = try await client.send(envelope: ProcessFixtures.envelope(4, payload: "refused"), mode: .reliableEventually)
            Issue.record("the fourth reliable send was accepted over a limit of 3")
        } catch let error as MeshClientError {
            #expect(error.code == "queue-full")
            #expect(error.message.contains("outbox items per peer = 3"), "\(error.message)")
            #expect(error.message.contains("`outbox_max_items_per_peer` in meshd.toml"), "\(error.message)")
            #expect(error.message.contains("meshctl queue cancel"), "\(error.message)")
        }
        await client.close()

        let cli = try await pair.a.meshctl(["send", "--feature", "demo", "--mode", "reliable", "also refused"])
        #expect(cli.status != 0)
        #expect(cli.output.contains("outbox_max_items_per_peer"), "\(cli.output)")

        let queued = try await pair.a.meshctl(["queue", "--json"])
        let items = try #require((try JSONSerialization.jsonObject(with: Data(queued.output.utf8)) as? [String: Any])?["items"] as? [[String: Any]])
        #expect(items.count == 3)
        #expect(items.allSatisfy { $0["peer"] as? String == pair.idB && $0["featureID"] as? String == "demo" })

        try await pair.b.restart()
        let watch = try WatchProcess(pair.b, feature: "demo")
        defer { watch.stopNow() }
        let envelopes = try await watch.envelopes(3, timeout: 20)
        #expect(envelopes.compactMap { $0["sequence"] as? Int } == [1, 2, 3])
        #expect(envelopes.compactMap { $0["payload"] as? String } == ["kept 1", "kept 2", "kept 3"])
        let extra = try? await watch.next(type: "envelope", timeout: 1.5)
        #expect(extra == nil, "nothing beyond the three queued items arrives, and none twice")

        var remaining = -1
        try? await waitUntil("A's outbox drains", timeout: 5) {
            let after = try await pair.a.meshctl(["queue", "--json"])
            remaining = ((try? JSONSerialization.jsonObject(with: Data(after.output.utf8)) as? [String: Any])?["items"] as? [Any])?.count ?? -1
            return remaining == 0
        }
        #expect(remaining == 0, "A's outbox drains once B acknowledged")
    }

    /// `pending_max_items = 5`: eight realtime sends before the first activation keep the newest
    /// five, three are counted dropped.
    @Test func thePreActivationBufferCapComesFromTheConfigFile() async throws {
        let config = try configFile("pending_max_items = 5\n")
        defer { try? FileManager.default.removeItem(atPath: config.folder) }
        let pair = try await DaemonPair.start(extraA: ["--config", config.path])
        defer { pair.stopNow() }
        try await pair.b.kill9()
        try await pair.a.kill9()
        try await pair.a.restart()

        let client = try await MeshClient.connect(socketPath: pair.a.socketPath)
        for sequence in 1...8 {
            let reply = try await client.send(envelope: ProcessFixtures.envelope(UInt64(sequence)), mode: .realtimeBestEffort)
            #expect(reply.outcome == .pending)
        }
        await client.close()
        let counters = try #require(try await pair.a.status()["counters"] as? [String: Any])
        #expect(counters["pending.dropped"] as? Int == 3)

        try await pair.b.restart()
        let watch = try WatchProcess(pair.b, feature: "demo")
        defer { watch.stopNow() }
        let envelopes = try await watch.envelopes(5, timeout: 20)
        #expect(envelopes.compactMap { $0["sequence"] as? Int } == Array(4...8))
    }

    /// A bad limit in the file stops meshd with status 78 and a message naming file, line and key.
    @Test func anOutOfRangeLimitStopsStartUpWithExitStatus78() async throws {
        let config = try configFile("name = \"x\"\noutbox_max_items_per_peer = 0\n")
        defer { try? FileManager.default.removeItem(atPath: config.folder) }
        let result = try await DaemonProcess.run("meshd", ["--user", "--config", config.path, "--state-dir", config.folder + "/state",
                                                           "--socket", config.folder + "/meshd.sock", "--listen", "127.0.0.1:0"])
        #expect(result.status == 78)
        #expect(result.output.contains("\(config.path):2: key 'outbox_max_items_per_peer': 0 is out of range; use 1 to 100000000 items"),
                "\(result.output)")
    }
}
