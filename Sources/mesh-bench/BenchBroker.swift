#if canImport(Glibc)
import Glibc
#endif
import Foundation
import NIOPosix

/// A Mosquitto (`/usr/sbin/mosquitto`, the Debian package) started for a benchmark on 127.0.0.1
/// and a free port, anonymous, in a temporary folder of its own; stopped by PID.
final class BenchBroker: @unchecked Sendable {
    let port: Int
    let folder: String
    private let process = Process()

    /// `persistence`: keep messages on disk as Debian's `/etc/mosquitto/mosquitto.conf` does
    /// (`persistence true`, here in the broker's own folder); `extra`: more lines of config (a
    /// bridge). `name` tells two brokers of one run apart in their folders.
    init(name: String = "broker", persistence: Bool = false, extra: String = "") throws {
        folder = NSTemporaryDirectory() + "mesh-bench-\(name)-\(getpid())"
        try? FileManager.default.removeItem(atPath: folder)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        port = try Self.freePort()
        var config = "allow_anonymous true\nlog_dest stderr\nset_tcp_nodelay true\nlistener \(port) 127.0.0.1\n"
        config += persistence ? "persistence true\npersistence_location \(folder)/\n" : "persistence false\n"
        if getuid() == 0 { config += "user root\n" }
        config += extra
        try config.write(toFile: folder + "/mosquitto.conf", atomically: true, encoding: .utf8)
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/mosquitto")
        process.arguments = ["-c", folder + "/mosquitto.conf"]
        let output = Pipe()
        process.standardError = output
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        var text = ""
        let deadline = Date().addingTimeInterval(10)
        while !text.contains(" running"), Date() < deadline {
            let chunk = output.fileHandleForReading.availableData
            guard !chunk.isEmpty else { break }
            text += String(decoding: chunk, as: UTF8.self)
        }
        guard text.contains(" running") else {
            stop()
            throw BenchError("mosquitto did not start: \(text)")
        }
        output.fileHandleForReading.readabilityHandler = { _ = $0.availableData }
    }

    var pid: Int32 { process.processIdentifier }

    /// CPU time (user + system) the broker used so far.
    func cpuSeconds() -> CPUTime? { ProcessCPU.seconds(pid: pid) }

    func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// A TCP port on 127.0.0.1 nobody listens on right now.
    static func freePort() throws -> Int {
        let probe = try ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton).bind(host: "127.0.0.1", port: 0).wait()
        defer { try? probe.close().wait() }
        guard let port = probe.localAddress?.port else { throw BenchError("no free port on 127.0.0.1") }
        return port
    }
}

/// CPU time of any process by PID, from /proc/PID/stat.
enum ProcessCPU {
    static func seconds(pid: Int32) -> CPUTime? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = text.lastIndex(of: ")") else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        // After the command: state is field 3, utime 14, stime 15 (1-based) → indexes 11, 12 here.
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        let tick = Double(sysconf(Int32(_SC_CLK_TCK)))
        return CPUTime(user: user / tick, system: system / tick)
    }
}
