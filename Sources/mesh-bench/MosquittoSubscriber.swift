#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MeshCore

/// A receiving MQTT client as a process of its own, so it can be killed with SIGKILL:
/// `mosquitto_sub` (the Debian package's) with a persistent session (`-c`, a fixed client ID) at
/// QoS 1, printing each message's payload (in hex, or as it is), one line each. Restarted with the same ID, it
/// gets what the broker queued for it meanwhile. Every line goes to `onLine` on a reader thread,
/// with the number of the process that printed it (0 for the first, 1 after one restart, …): lines
/// a killed process wrote are still read after its kill.
final class MosquittoSubscriber: @unchecked Sendable {
    private let port: Int
    private let topic: String
    private let clientID = "bench-sub-\(UUID().uuidString.prefix(8))"
    private let format: String
    private let onLine: @Sendable (Substring, Int) -> Void
    private var process = Process()
    private var starts = 0
    private var reader: Thread?

    /// `format`: mosquitto_sub's `-F` (`%x` the payload in hex, `%p` as it is).
    init(port: Int, topic: String, format: String, onLine: @escaping @Sendable (Substring, Int) -> Void) throws {
        self.port = port
        self.topic = topic
        self.format = format
        self.onLine = onLine
        try start()
    }

    /// Starts `mosquitto_sub`; the time it was started at (monotonic ns).
    @discardableResult
    func start() throws -> UInt64 {
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/mosquitto_sub")
        process.arguments = ["-h", "127.0.0.1", "-p", "\(port)", "-i", clientID, "-c", "-q", "1", "-t", topic, "-F", format]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        let started = DispatchTime.now().uptimeNanoseconds
        try process.run()
        let onLine = self.onLine
        let incarnation = starts
        starts += 1
        let handle = pipe.fileHandleForReading
        let thread = Thread {
            var pending = Data()
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { return }
                pending.append(chunk)
                while let newline = pending.firstIndex(of: 0x0a) {
                    let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                    pending.removeSubrange(pending.startIndex...newline)
                    onLine(Substring(line), incarnation)
                }
            }
        }
        reader = thread
        thread.start()
        return started
    }

    /// SIGKILL, reaped.
    func kill9() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    func stop() { kill9() }

    /// The first 16 characters of a line as a hexadecimal number (the first 8 bytes of a `%x`
    /// line as a big-endian integer).
    static func sequence(_ line: Substring) -> UInt64? {
        guard line.count >= 16 else { return nil }
        return UInt64(line.prefix(16), radix: 16)
    }
}
