#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing

/// What `meshd` does before it touches a secret: an existing state folder with the wrong mode
/// or owner stops it with the command that fixes it, and the running daemon cannot dump core.
@Suite("meshd state folder and process hardening", .enabled(if: ChildProcess.executable("meshd") != nil, "meshd is not built"))
struct MeshdStateFolderTests {
    @Test func aStateFolderOthersCanEnterStopsMeshdWithTheChmodToRun() async throws {
        let directory = try TemporaryFolder.make()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let state = directory + "/state"
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: false)
        #expect(chmod(state, 0o755) == 0)
        let result = try await DaemonProcess.run("meshd", ["--user", "--state-dir", state, "--socket", directory + "/s.sock",
                                                           "--listen", "127.0.0.1:0", "--no-mdns"], timeout: 10)
        #expect(result.status == 77, "\(result)")
        #expect(result.output.contains("state folder \(state) is mode 0755; run chmod 700 \(state)"), "\(result.output)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: state).isEmpty, "nothing is written into it")

        #expect(chmod(state, 0o700) == 0)
        let meshd = try ChildProcess("meshd", ["--user", "--state-dir", state, "--socket", directory + "/s.sock",
                                               "--listen", "127.0.0.1:0", "--no-mdns", "--log-level", "warning"])
        defer { meshd.terminate(); meshd.process.waitUntilExit() }
        try await Self.waitUntilAnswering(directory + "/s.sock")
    }

    /// Root running meshd on a user's folder would leave root-owned files there.
    @Test(.enabled(if: getuid() == 0, "needs root to give the folder to another user"))
    func aStateFolderOfAnotherUserStopsMeshdWithTheChownToRun() async throws {
        let directory = try TemporaryFolder.make()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let state = directory + "/state"
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: false)
        #expect(chmod(state, 0o700) == 0)
        let nobody = try #require(getpwnam("nobody")).pointee.pw_uid
        #expect(chown(state, nobody, gid_t.max) == 0)
        let result = try await DaemonProcess.run("meshd", ["--user", "--state-dir", state, "--socket", directory + "/s.sock",
                                                           "--listen", "127.0.0.1:0", "--no-mdns"], timeout: 10)
        #expect(result.status == 77, "\(result)")
        #expect(result.output.contains("state folder \(state) belongs to uid \(nobody), but meshd runs as uid 0; run chown -R 0 \(state), or start meshd as uid \(nobody)"),
                "\(result.output)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: state).isEmpty)
    }

    /// A process that is not dumpable has its /proc files owned by root (proc(5)), whatever its
    /// uid: meshd run as nobody shows that once it serves.
    @Test(.enabled(if: MeshdProcessTests.canRunMeshdAsNobody, "needs root, setpriv and meshd"))
    func theDaemonCannotDumpCore() async throws {
        let directory = try TemporaryFolder.make()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        guard let (state, nobody) = try MeshdProcessTests.stateFolderOwnedByNobody(in: directory) else { return }
        let socket = state + "/meshd.sock"
        let meshd = try ChildProcess("meshd", ["--config", "/dev/null", "--state-dir", state, "--socket", socket,
                                               "--listen", "127.0.0.1:0", "--no-mdns", "--log-level", "warning"],
                                     launcher: ["/usr/bin/setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"])
        defer { meshd.terminate(); meshd.process.waitUntilExit() }
        try await Self.waitUntilAnswering(socket)
        let pid = meshd.process.processIdentifier
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        #expect(status.contains("Uid:\t\(nobody)\t"), "meshd runs as nobody")
        var info = stat()
        #expect(stat("/proc/\(pid)/environ", &info) == 0)
        #expect(info.st_uid == 0, "a dumpable process's /proc files belong to it (uid \(nobody)); meshd's belong to root")
    }

    private static func waitUntilAnswering(_ socket: String) async throws {
        try await waitUntil("meshd answers on \(socket)", timeout: 10) {
            try await DaemonProcess.run("meshctl", ["--socket", socket, "status"], timeout: 5).status == 0
        }
    }
}
