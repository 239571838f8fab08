import Foundation
import MeshCore
import Testing

/// `meshd --version`, as a user or a packager's script runs it.
@Suite("meshd --version", .enabled(if: ChildProcess.executable("meshd") != nil, "meshd is not built"))
struct MeshdVersionTests {
    @Test func versionFlagPrintsThisBuildsVersionAndStartsNothing() async throws {
        let meshd = try ChildProcess("meshd", ["--version"])
        #expect(try await meshd.readLine() == SessionMeshVersion.current)
        #expect(try await meshd.readLine() == nil)
        #expect(try await meshd.exitStatus() == 0)
    }
}
