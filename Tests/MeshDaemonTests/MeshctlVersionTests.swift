import Foundation
import MeshCore
import MeshLocalAPI
import SessionMeshClient
import Testing

/// What version a user sees from `meshctl`, and that what it prints before it waits reaches a
/// pipe at once (a script, ssh without a terminal, `| tee`).
@Suite("meshctl version and piped output", .enabled(if: ChildProcess.executable("meshctl") != nil, "meshctl is not built"))
struct MeshctlVersionTests {
    @Test func versionFlagPrintsThisBuildsVersion() async throws {
        let meshctl = try ChildProcess("meshctl", ["--version"])
        #expect(try await meshctl.readLine() == SessionMeshVersion.current)
        #expect(try await meshctl.exitStatus() == 0)
    }

    @Test func helloAndStatusReportTheDaemonsVersion() async throws {
        try await withTestServer { test in
            let client = try await MeshClient.connect(socketPath: test.socketPath)
            let hello = try await client.hello()
            let status = try await client.status()
            await client.close()
            #expect(hello.daemonVersion == SessionMeshVersion.current)
            #expect(status.version == SessionMeshVersion.current)
        }
    }

    /// Without a terminal the code used to sit in stdout's block buffer until the command ended
    /// (after Ctrl-C, behind "pairing cancelled"). The line must be readable while meshctl waits.
    @Test func pairPrintsTheCodeIntoAPipeBeforeItWaits() async throws {
        try await withTestServer { test in
            let meshctl = try ChildProcess("meshctl", ["--socket", test.socketPath, "pair", "--expires", "60"])
            // meshctl is now in pair.wait: everything before the wait has been printed.
            try await pollUntil { await test.controlPlane.waitingCount() == 1 }
            let started = Date()
            let first = try await meshctl.readLine(timeout: 1)
            #expect(first == "Pairing code: \(FakeControlPlane.code)")
            #expect(Date().timeIntervalSince(started) < 1)
            let hint = try await meshctl.readLine(timeout: 1)
            #expect(hint?.contains("meshctl pair -") == true)
            meshctl.interrupt()
            #expect(try await meshctl.exitStatus() == 130)
        }
    }
}
