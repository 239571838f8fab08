import Foundation
import Testing

/// One state folder, one daemon: a second `meshd` on the same `--state-dir` (a second terminal,
/// a unit started twice) refuses to start, naming the folder and the running daemon's pid, and
/// leaves the first one and its files alone. A crashed daemon's lock goes with it.
@Suite("meshd state folder lock", .serialized,
       .enabled(if: ChildProcess.executable("meshd") != nil && ChildProcess.executable("meshctl") != nil, "meshd/meshctl are not built"))
struct MeshdStateLockTests {
    @Test func aSecondDaemonOnTheSameStateFolderRefusesAndTheFirstKeepsServing() async throws {
        let first = try await DaemonProcess(name: "alpha")
        defer { first.stopNow() }
        let identity = try Data(contentsOf: URL(fileURLWithPath: first.stateDirectory + "/identity.key"))
        let second = try ChildProcess("meshd", ["--user", "--state-dir", first.stateDirectory, "--socket", first.folder + "/second.sock",
                                                "--listen", "127.0.0.1:0", "--no-mdns"], stderrToStdout: true)
        var lines: [String] = []
        while let line = try await second.readLine(timeout: 10) { lines.append(line) }
        #expect(try await second.exitStatus() == 1)
        let pid = first.pid.map(String.init) ?? "?"
        #expect(lines.contains { $0.contains("another meshd (pid \(pid)) is already using the state folder \(first.stateDirectory)") },
                "\(lines)")
        #expect(!FileManager.default.fileExists(atPath: first.folder + "/second.sock"))
        #expect(try await first.meshctl(["status"]).status == 0)
        #expect(try Data(contentsOf: URL(fileURLWithPath: first.stateDirectory + "/identity.key")) == identity)

        // After kill -9 the kernel has dropped the lock: a restart on the same folder works.
        try await first.kill9()
        try await first.restart()
        #expect(try await first.meshctl(["status"]).status == 0)
    }
}
