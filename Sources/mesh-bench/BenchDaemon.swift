#if canImport(Glibc)
import Glibc
#endif
import Foundation
import SessionMeshClient

/// A `meshd` child process for `mesh-bench delivery`: its own temporary state folder and
/// socket on 127.0.0.1, killed by PID when the benchmark ends.
final class BenchDaemon: @unchecked Sendable {
    let name: String
    let folder: String
    let process = Process()
    var socketPath: String { folder + "/meshd.sock" }
    var pid: Int32 { process.processIdentifier }

    /// Starts `meshd` (found next to this executable) and waits up to 60 s for its socket.
    /// `MESH_BENCH_WRAP_BENCH_A` / `MESH_BENCH_WRAP_BENCH_B` run that daemon under a wrapper
    /// (an absolute path and its arguments, split at spaces), e.g. to count its instructions per
    /// message: `MESH_BENCH_WRAP_BENCH_B="/usr/bin/valgrind --tool=callgrind"` (CLIENT.md).
    init(name: String, executable: String) async throws {
        self.name = name
        folder = "/tmp/mbd-" + UUID().uuidString.prefix(12).lowercased()
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        let wrapper = ProcessInfo.processInfo.environment["MESH_BENCH_WRAP_" + name.uppercased().replacingOccurrences(of: "-", with: "_")]
            .map { $0.split(separator: " ").map(String.init) } ?? []
        process.executableURL = URL(fileURLWithPath: wrapper.first ?? executable)
        process.arguments = (wrapper.isEmpty ? [] : Array(wrapper.dropFirst()) + [executable])
            + ["--user", "--state-dir", folder + "/state", "--socket", socketPath,
               "--listen", "127.0.0.1:0", "--name", name, "--log-level", "error"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            if let client = try? await MeshClient.connect(socketPath: socketPath) {
                await client.close()
                return
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        stop()
        throw BenchError("\(name): meshd did not open \(socketPath) within 60 s")
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

    /// CPU time (user + system) the daemon used so far, seconds, from /proc/PID/stat: a figure
    /// that, unlike wall time, does not depend on what else the machine runs.
    func cpuSeconds() -> CPUTime? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = text.lastIndex(of: ")") else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        // After the command: state is field 3, utime 14, stime 15 (1-based) → indexes 11, 12 here.
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        let tick = Double(sysconf(Int32(_SC_CLK_TCK)))
        return CPUTime(user: user / tick, system: system / tick)
    }

    /// SIGTERM (SIGKILL after 5 s), reap, remove the folder.
    func stop() {
        if process.isRunning {
            kill(pid, SIGTERM)
            for _ in 0..<500 where process.isRunning { usleep(10_000) }
            if process.isRunning { kill(pid, SIGKILL) }
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(atPath: folder)
    }
}

/// A benchmark failure with a sentence saying what did not happen.
struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
