import Foundation
@testable import MeshDaemon
import SessionMeshClient
import Testing

/// The `meshd` executable: start-up, readiness, graceful stop, configuration errors.
@Suite("meshd process", .enabled(if: ChildProcess.executable("meshd") != nil, "meshd is not built"))
struct MeshdProcessTests {
    @Test func meshdNotifiesReadyServesStatusAndStopsCleanlyOnSigterm() async throws {
        let directory = try TemporaryFolder.make()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let notify = try NotifySocket(path: directory + "/notify")
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

    /// The start-up failure a new user meets first, a listen port already taken (a second
    /// `make run` with another state folder, another program on 47470), is one sentence that
    /// says so and what to do, not NIO's "bind(descriptor:ptr:bytes:): Address already in use)
    /// (errno: 98)"; the running daemon keeps serving.
    @Test func aListenPortInUseSaysSoAndTheFirstDaemonKeepsServing() async throws {
        let first = try await DaemonProcess(name: "alpha")
        defer { first.stopNow() }
        let second = try ChildProcess("meshd", ["--user", "--state-dir", first.folder + "/other", "--socket", first.folder + "/other.sock",
                                                "--listen", first.listen, "--no-mdns", "--log-level", "warning"], stderrToStdout: true)
        var lines: [String] = []
        while let line = try await second.readLine(timeout: 10) { lines.append(line) }
        #expect(try await second.exitStatus() == 1)
        #expect(lines.contains { $0.contains("cannot listen on \(first.listen): the port is in use (another meshd, or another program); stop that, or give this daemon another --listen HOST:PORT") },
                "\(lines)")
        #expect(!lines.contains { $0.contains("errno") }, "\(lines)")
        #expect(try await first.meshctl(["status"]).status == 0)
    }

    @Test func anAddressThisMachineDoesNotHaveSaysSo() async throws {
        let directory = try TemporaryFolder.make()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // 192.0.2.0/24 is TEST-NET-1: never assigned to a host.
        let meshd = try ChildProcess("meshd", ["--user", "--state-dir", directory + "/state", "--socket", directory + "/s.sock",
                                               "--listen", "192.0.2.1:0", "--no-mdns", "--log-level", "warning"], stderrToStdout: true)
        var lines: [String] = []
        while let line = try await meshd.readLine(timeout: 10) { lines.append(line) }
        #expect(try await meshd.exitStatus() == 1)
        #expect(lines.contains { $0.contains("cannot listen on 192.0.2.1:0: no network interface of this machine has that address") }, "\(lines)")

        // Shaped like an address, but not one (each part at most 255).
        let unknown = try ChildProcess("meshd", ["--user", "--state-dir", directory + "/state", "--socket", directory + "/s.sock",
                                                 "--listen", "256.1.1.1:0", "--no-mdns", "--log-level", "warning"], stderrToStdout: true)
        lines = []
        while let line = try await unknown.readLine(timeout: 10) { lines.append(line) }
        #expect(try await unknown.exitStatus() == 1)
        #expect(lines.contains { $0.contains("cannot listen on 256.1.1.1:0: '256.1.1.1' is not an address of this machine and does not resolve as a host name") },
                "\(lines)")
    }

    /// README's quick start promises that meshd's first log line names the state folder and the
    /// socket (where to look, what to pass to meshctl); before, on a loopback address, the mDNS
    /// notice came first.
    @Test func theFirstLogLineNamesTheStateFolderAndTheSocket() async throws {
        let directory = try TemporaryFolder.make()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let socket = directory + "/s.sock"
        let meshd = try ChildProcess("meshd", ["--user", "--state-dir", directory + "/state", "--socket", socket,
                                               "--listen", "127.0.0.1:0", "--log-level", "info"], stderrToStdout: true)
        let first = try? await meshd.readLine(timeout: 10)
        #expect(first?.contains("meshd starting") == true, "\(String(describing: first))")
        #expect(first?.contains("state.dir=\(directory)/state") == true && first?.contains("api.socket=\(socket)") == true,
                "\(String(describing: first))")
        meshd.terminate()
        _ = try await meshd.exitStatus()
    }

    /// A --socket in a folder this user may not write says so in words (before: NIO's
    /// "bind(descriptor:ptr:bytes:): Permission denied) (errno: 13)", or Foundation's "The
    /// operation could not be completed" for a missing folder). Runs meshd as nobody (root and
    /// setpriv needed).
    @Test(.enabled(if: Self.canRunMeshdAsNobody, "needs root, setpriv and meshd"))
    func aSocketFolderThisUserMayNotWriteSaysSo() async throws {
        let directory = try TemporaryFolder.make()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        guard let (state, _) = try Self.stateFolderOwnedByNobody(in: directory) else { return }
        for (socket, message) in [
            (directory + "/s.sock", "cannot listen on the local API socket \(directory)/s.sock: permission denied: this user may not create files in \(directory); choose another --socket"),
            (directory + "/sub/s.sock", "cannot prepare the local API socket \(directory)/sub/s.sock: cannot create folder \(directory)/sub: Permission denied"),
        ] {
            let result = try await Self.runMeshdAsNobody(["--user", "--state-dir", state, "--socket", socket])
            #expect(result.status == 1, "\(result)")
            #expect(result.output.contains(message) && !result.output.contains("errno"), "\(result.output)")
        }
    }

    /// `meshd --state-dir ""` (an unset shell variable) stops with a configuration error and
    /// writes nothing into the working directory (before: it ran there, creating identity.key,
    /// delivery.sqlite and meshd.lock).
    @Test func anEmptyStateDirStopsAndLeavesTheWorkingDirectoryAlone() async throws {
        let directory = try TemporaryFolder.make()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try await DaemonProcess.run("meshd", ["--user", "--state-dir", "", "--socket", directory + "/s.sock",
                                                           "--listen", "127.0.0.1:0", "--no-mdns"], timeout: 10, directory: directory)
        #expect(result.status == 78, "\(result)")
        #expect(result.output.contains("meshd: configuration error: --state-dir: is empty"), "\(result.output)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
    }

    /// A state folder whose queue database belongs to another user (meshd once run with sudo on
    /// it) says "permission denied" and names the owner, instead of SQLite's "unable to open
    /// database file (SQLite code 14)"; the file is left as it was. Runs meshd as nobody.
    @Test(.enabled(if: Self.canRunMeshdAsNobody, "needs root, setpriv and meshd"))
    func aQueueDatabaseOfAnotherUserSaysPermissionDenied() async throws {
        let directory = try TemporaryFolder.make()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        guard let (state, nobody) = try Self.stateFolderOwnedByNobody(in: directory) else { return }
        let database = state + "/delivery.sqlite"
        try DeliveryStore.open(path: database).close()    // as root: owned by uid 0
        let before = try Data(contentsOf: URL(fileURLWithPath: database))
        let result = try await Self.runMeshdAsNobody(["--state-dir", state, "--socket", directory + "/s.sock"])
        #expect(result.status == 1, "\(result)")
        #expect(result.output.contains("open database failed on \(database): permission denied: this user (uid \(nobody)) may not read and write it (owner uid 0, mode 600)"),
                "\(result.output)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: database)) == before)
    }
    /// A user's first run: plain `meshd` (no --user, no --state-dir) as an ordinary user meets the
    /// system daemon's state folder, which needs root. It stops with EX_CANTCREAT, names the
    /// folder, and points at `meshd --user`; it creates nothing there. Runs meshd as nobody.
    @Test(.enabled(if: Self.canRunMeshdAsNobody, "needs root, setpriv and meshd"))
    func aFirstRunWithoutUserAsAnOrdinaryUserPointsAtMeshdUser() async throws {
        let meshd = try #require(ChildProcess.executable("meshd"))
        let systemState = "/var/lib/sessionmesh"
        let existed = FileManager.default.fileExists(atPath: systemState)
        let directory = try TemporaryFolder.make()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        #expect(chmod(directory, 0o755) == 0)
        let result = try await DaemonProcess.run("/usr/bin/setpriv", ["--reuid=nobody", "--regid=nogroup", "--clear-groups", meshd,
                                                                      "--config", "/dev/null", "--socket", directory + "/s.sock",
                                                                      "--listen", "127.0.0.1:0", "--no-mdns"], timeout: 10)
        #expect(result.status == 73, "\(result)")
        #expect(result.output.contains("cannot use the state folder") && result.output.contains(systemState), "\(result.output)")
        #expect(result.output.contains("for a daemon of your own, run meshd --user (state in ~/.local/state/sessionmesh)"), "\(result.output)")
        #expect(FileManager.default.fileExists(atPath: systemState) == existed)
        #expect(!FileManager.default.fileExists(atPath: directory + "/s.sock"))
    }

    /// The tests that run meshd as `nobody` need root, setpriv and a built meshd.
    static let canRunMeshdAsNobody = getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")
        && ChildProcess.executable("meshd") != nil

    /// Makes `directory` enterable by others (0755) and creates `state` in it (0700), owned by
    /// `nobody`; nil when this system has no such user.
    static func stateFolderOwnedByNobody(in directory: String) throws -> (state: String, nobody: uid_t)? {
        #expect(chmod(directory, 0o755) == 0)
        let state = directory + "/state"
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: false)
        #expect(chmod(state, 0o700) == 0)
        guard let nobody = getpwnam("nobody") else { return nil }
        #expect(chown(state, nobody.pointee.pw_uid, nobody.pointee.pw_gid) == 0)
        return (state, nobody.pointee.pw_uid)
    }

    /// meshd run as `nobody` with `arguments`, no config file, any port, no mDNS, warnings only.
    static func runMeshdAsNobody(_ arguments: [String]) async throws -> (status: Int32, output: String) {
        let meshd = try #require(ChildProcess.executable("meshd"))
        return try await DaemonProcess.run("/usr/bin/setpriv", ["--reuid=nobody", "--regid=nogroup", "--clear-groups", meshd,
                                                                "--config", "/dev/null"] + arguments
                                                               + ["--listen", "127.0.0.1:0", "--no-mdns", "--log-level", "warning"])
    }
}
