import Foundation
import SessionMeshClient
import Testing

/// The `app` name an app gives when it attaches is in meshd's log at info level, quoted, so an
/// operator can tell which app is attached (docs/LOCAL-API.md, README "Logs").
@Suite("meshd logs attaching apps", .enabled(if: ChildProcess.executable("meshd") != nil, "meshd is not built"))
struct MeshdAttachLogTests {
    @Test func anAttachIsLoggedAtInfoWithTheAppNameQuoted() async throws {
        let folder = try TemporaryFolder.make()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let socket = folder + "/meshd.sock"
        let meshd = try ChildProcess("meshd", ["--config", "/dev/null", "--state-dir", folder + "/state", "--socket", socket,
                                               "--listen", "127.0.0.1:0", "--no-mdns", "--name", "logtest", "--log-level", "info"],
                                     stderrToStdout: true)
        defer { meshd.terminate(); _ = meshd.waitForExit(seconds: 10) }
        var lines: [String] = []
        while let line = try await meshd.readLine(timeout: 30) {
            lines.append(line)
            if line.contains("local API listening") { break }
        }
        #expect(lines.last?.contains("local API listening") == true, "\(lines)")

        let client = try await MeshClient.connect(socketPath: socket)
        _ = try await client.attach(features: ["notes"], app: "notes-app\nforged line")
        var attached: String?
        while attached == nil, let line = try await meshd.readLine(timeout: 10) {
            if line.contains("app attached") { attached = line }
        }
        await client.close()
        let line = try #require(attached, "no 'app attached' line at info level")
        #expect(line.contains(#"attach.app="notes-app\nforged line""#), "\(line)")
        #expect(line.contains(#"attach.features="notes""#), "\(line)")
    }
}
