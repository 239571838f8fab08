#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing

/// What `meshd` does before it touches a secret: an existing state folder others may read is
/// made private, one of another user or that others may write stops it with the command that
/// fixes it, and the running daemon cannot dump core.
@Suite("meshd state folder and process hardening", .enabled(if: ChildProcess.executable("meshd") != nil, "meshd is not built"))
struct MeshdStateFolderTests {
    /// A folder the user made with `mkdir` (mode 0755: others may read, no one else may write)
    /// is made 0700 with one log line, and meshd serves.
    @Test func aStateFolderOthersCanReadIsMadePrivateWithOneLogLine() async throws {
        let directory = try TemporaryFolder.make()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let state = directory + "/state"
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: false)
        #expect(chmod(state, 0o755) == 0)
        let meshd = try ChildProcess("meshd", ["--user", "--state-dir", state, "--socket", directory + "/s.sock",
                                               "--listen", "127.0.0.1:0", "--no-mdns", "--log-level", "notice"],
                                     stderrToStdout: true)
        defer { meshd.terminate(); meshd.process.waitUntilExit() }
        try await Self.waitUntilAnswering(directory + "/s.sock")
        var info = stat()
        #expect(stat(state, &info) == 0)
        #expect(info.st_mode & 0o7777 == 0o700)
        var lines: [String] = []
        meshd.terminate()
        for _ in 0..<200 {
            guard let line = try await meshd.readLine(timeout: 5) else { break }
            lines.append(line)
        }
        let tightened = lines.filter { $0.contains("state folder was readable by others; made it private") }
        #expect(tightened.count == 1, "\(lines)")
        #expect(tightened.first?.contains("state.mode.was=0755") == true, "\(tightened)")
        print("state folder 0755 → 0700 at start, \(tightened.count) log line: \(tightened.first ?? "-")")
    }

    /// Group or others could have put files into a folder they may write: meshd stops with
    /// the command to run after checking it, and writes nothing there.
    @Test(arguments: [0o775, 0o757, 0o770] as [mode_t])
    func aStateFolderOthersCanWriteStopsMeshdWithTheChmodToRun(mode: mode_t) async throws {
        let directory = try TemporaryFolder.make()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let state = directory + "/state"
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: false)
        #expect(chmod(state, mode) == 0)
        let result = try await DaemonProcess.run("meshd", ["--user", "--state-dir", state, "--socket", directory + "/s.sock",
                                                           "--listen", "127.0.0.1:0", "--no-mdns"], timeout: 10)
        #expect(result.status == 77, "\(result)")
        let shown = String(mode, radix: 8)
        #expect(result.output.contains("state folder \(state) is mode 0\(shown): group or others may write to it; check what is in it, then run chmod 700 \(state)"),
                "\(result.output)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: state).isEmpty, "nothing is written into it")
        var info = stat()
        #expect(stat(state, &info) == 0 && info.st_mode & 0o7777 == mode, "its mode is left as it was")

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
