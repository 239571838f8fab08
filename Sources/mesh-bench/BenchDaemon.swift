#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MeshDaemon
import SessionMeshClient

/// A `meshd` child process for `mesh-bench delivery`: its own temporary state folder and
/// socket on 127.0.0.1, killed by PID when the benchmark ends.
final class BenchDaemon: @unchecked Sendable {
    let name: String
    let folder: String
    private(set) var process = Process()
    let executable: String
    /// Arguments after the defaults (`--relay URL`, `--no-mdns`).
    let extraArguments: [String]
    /// Where it listens for paired devices (`--listen`): `127.0.0.1:0` unless told.
    private(set) var listen: String
    var socketPath: String { folder + "/meshd.sock" }
    /// The daemon's own PID, as its socket reports it (`SO_PEERCRED`): under a wrapper that
    /// runs it as a child (`strace -f`, `perf stat`) not the wrapper's, so its memory and CPU
    /// are the daemon's and `stop()` ends the daemon, not only the wrapper.
    private(set) var pid: Int32 = 0

    /// Starts `meshd` (found next to this executable) and waits up to 60 s for its socket.
    /// `MESH_BENCH_WRAP_BENCH_A` / `MESH_BENCH_WRAP_BENCH_B` run that daemon under a wrapper
    /// (an absolute path and its arguments, split at spaces), e.g. to count its instructions per
    /// message: `MESH_BENCH_WRAP_BENCH_B="/usr/bin/valgrind --tool=callgrind"` (CLIENT.md).
    init(name: String, executable: String, listen: String = "127.0.0.1:0", extraArguments: [String] = []) async throws {
        self.name = name
        self.executable = executable
        self.listen = listen
        self.extraArguments = extraArguments
        folder = "/tmp/mbd-" + UUID().uuidString.prefix(12).lowercased()
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        try launch()
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            if let client = try? await MeshClient.connect(socketPath: socketPath) {
                await client.close()
                if let daemon = Self.listenerPID(socketPath: socketPath) { pid = daemon }
                return
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        stop()
        throw BenchError("\(name): meshd did not open \(socketPath) within 60 s")
    }

    private func launch() throws {
        let wrapper = ProcessInfo.processInfo.environment["MESH_BENCH_WRAP_" + name.uppercased().replacingOccurrences(of: "-", with: "_")]
            .map { $0.split(separator: " ").map(String.init) } ?? []
        process = Process()
        process.executableURL = URL(fileURLWithPath: wrapper.first ?? executable)
        process.arguments = (wrapper.isEmpty ? [] : Array(wrapper.dropFirst()) + [executable])
            + ["--user", "--state-dir", folder + "/state", "--socket", socketPath,
               "--listen", listen, "--name", name, "--log-level", "error"] + extraArguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        pid = process.processIdentifier
    }

    /// SIGKILL to the daemon (no shutdown of any kind), reaped; its state folder stays.
    func kill9() {
        guard process.isRunning else { return }
        kill(pid, SIGKILL)
        if pid != process.processIdentifier { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    /// Starts the daemon again on the same state folder (listening on `listen` when given) and
    /// blocks until its socket answers (≤ 30 s): for the parts of a benchmark that run on threads.
    func restartBlocking(listen newListen: String? = nil) throws {
        kill9()
        if let newListen { listen = newListen }
        try? FileManager.default.removeItem(atPath: socketPath)
        try launch()
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            if let daemon = Self.listenerPID(socketPath: socketPath) {
                pid = daemon
                return
            }
            usleep(2_000)
        }
        throw BenchError("\(name): meshd did not open \(socketPath) within 30 s of its restart")
    }

    /// The port it listens on for paired devices, from `meshctl`-free means: the local API's status.
    func listenAddress() async throws -> String {
        let client = try await MeshClient.connect(socketPath: socketPath)
        defer { Task { await client.close() } }
        return try await client.status().listen
    }

    /// Resident set size from /proc/PID/status, in KiB (`field`: `VmRSS` in all, `RssAnon` the
    /// daemon's own memory, without the pages of its binary and libraries).
    func residentKiB(_ field: String = "VmRSS") -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix(field + ":") {
            return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
        }
        return nil
    }

    /// Whether the daemon maps the shared Swift runtime (`libswiftCore.so`), nil when unknown.
    var swiftRuntimeShared: Bool? { BenchDaemon.mapsSharedSwiftRuntime("/proc/\(pid)/maps") }

    /// Whether the process whose `/proc/…/maps` is `path` maps `libswiftCore.so`: a build
    /// without `--static-swift-stdlib` (`swift build -c release` alone, not `make release`),
    /// whose calls into the runtime go through the PLT and whose thread-local lookups (the
    /// runtime's exclusivity and task checks) through `__tls_get_addr`.
    static func mapsSharedSwiftRuntime(_ path: String) -> Bool? {
        // Read to the end: `String(contentsOfFile:)` stops after the first page of a /proc file.
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        guard let data = try? handle.readToEnd() else { return nil }
        return String(decoding: data, as: UTF8.self).contains("/libswiftCore.so")
    }

    /// CPU time (user + system) the daemon used so far, seconds, from /proc/PID/stat: a figure
    /// that, unlike wall time, does not depend on what else the machine runs.
    func cpuSeconds() -> CPUTime? { ProcessCPU.seconds(pid: pid) }

    /// SIGTERM to the daemon (SIGKILL to it and a wrapper after 5 s), reap, remove the folder.
    /// A wrapper ends when the daemon it runs ends.
    func stop() {
        if process.isRunning {
            kill(pid, SIGTERM)
            for _ in 0..<500 where process.isRunning { usleep(10_000) }
            if process.isRunning {
                kill(pid, SIGKILL)
                if pid != process.processIdentifier { kill(process.processIdentifier, SIGKILL) }
            }
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// The PID of the process listening on `socketPath` (`SO_PEERCRED` of a connection to it).
    private static func listenerPID(socketPath: String) -> Int32? {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let path = Array(socketPath.utf8)
        guard path.count < MemoryLayout.size(ofValue: address.sun_path) else { return nil }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: path) }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else { return nil }
        var credentials = PeerCredentials(pid: 0, uid: 0, gid: 0)
        var length = socklen_t(MemoryLayout<PeerCredentials>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0, credentials.pid > 0 else { return nil }
        return credentials.pid
    }
}

/// A benchmark failure with a sentence saying what did not happen.
struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
