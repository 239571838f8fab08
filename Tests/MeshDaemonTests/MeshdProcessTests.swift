import Foundation
import SessionMeshClient
import Testing

/// The `meshd` executable: start-up, readiness, graceful stop, configuration errors.
@Suite("meshd process", .enabled(if: ChildProcess.executable("meshd") != nil, "meshd is not built"))
struct MeshdProcessTests {
    @Test func meshdNotifiesReadyServesStatusAndStopsCleanlyOnSigterm() async throws {
        let directory = try TemporaryFolder.make()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let notify = try SystemdNotifierTests.NotifySocket(path: directory + "/notify")
        let socketPath = directory + "/run/meshd.sock"
        let meshd = try ChildProcess("meshd", ["--user", "--state-dir", directory + "/state", "--socket", socketPath,
                                               "--listen", "127.0.0.1:0", "--name", "proc-test"],
                                     environment: ["NOTIFY_SOCKET": notify.path])
        #expect(try await notify.receive() == "READY=1")
        let client = try await MeshClient.connect(socketPath: socketPath)
        let status = try await client.status()
        #expect(status.name == "proc-test")
        #expect(status.socket == socketPath)
        await client.close()
        let state = try FileManager.default.attributesOfItem(atPath: directory + "/state")
        #expect((state[.posixPermissions] as? Int) == 0o700)

        meshd.terminate()
        #expect(try await notify.receive() == "STOPPING=1")
        #expect(try await meshd.exitStatus() == 0)
        #expect(!FileManager.default.fileExists(atPath: socketPath))
    }

    @Test func aBadConfigFileStopsStartUpNamingTheKeyAndLine() async throws {
        let directory = try TemporaryFolder.make()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let config = directory + "/meshd.toml"
        try "name = \"x\"\n\nlisten = \"localhost\"\n".write(toFile: config, atomically: true, encoding: .utf8)
        let meshd = try ChildProcess("meshd", ["--config", config, "--state-dir", directory, "--socket", directory + "/s.sock"],
                                     stderrToStdout: true)
        let line = try await meshd.readLine()
        #expect(line == "meshd: configuration error: \(config):3: key 'listen': 'localhost' has no port; write HOST:PORT, e.g. 127.0.0.1:47470")
        #expect(try await meshd.exitStatus() == 78)
    }
}
