import Foundation
import Synchronization

/// A child process of the test with piped stdin/stdout/stderr, read on background threads.
/// Stdout lines are kept (with the time they arrived) so tests can await one with a deadline.
final class ChildProcess: Sendable {
    struct Line: Sendable {
        var text: String
        var receivedAt: ContinuousClock.Instant
    }

    private let process: Process
    private let input: Pipe
    private let lines = Mutex<[Line]>([])
    private let errorText = Mutex<String>("")
    let label: String

    init(label: String, executable: String, arguments: [String], environment: [String: String] = [:]) throws {
        ChildProcess.ignoreSIGPIPE
        self.label = label
        process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        for (key, value) in environment { env[key] = value }
        process.environment = env
        input = Pipe()
        let output = Pipe()
        let errors = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        ChildProcess.readLines(output.fileHandleForReading) { [self] text in
            lines.withLock { $0.append(Line(text: text, receivedAt: .now)) }
        }
        ChildProcess.readLines(errors.fileHandleForReading) { [self] text in
            errorText.withLock { $0 += text + "\n" }
        }
    }

    /// Every stdout line so far.
    var output: [Line] { lines.withLock { $0 } }
    /// Everything written to stderr so far.
    var errorOutput: String { errorText.withLock { $0 } }
    var isRunning: Bool { process.isRunning }
    var exitStatus: Int32? { process.isRunning ? nil : process.terminationStatus }
    var pid: Int32 { process.processIdentifier }

    /// Writes one line to the child's stdin (ignored if the child is gone).
    func send(_ line: String) {
        try? input.fileHandleForWriting.write(contentsOf: Data((line + "\n").utf8))
    }

    /// Closes the child's stdin.
    func closeInput() {
        try? input.fileHandleForWriting.close()
    }

    /// Sends SIGTERM to this child (our own PID) if it still runs.
    func terminate() {
        if process.isRunning { process.terminate() }
    }

    /// The first stdout line at index ≥ `from` matching `predicate`, awaited until `timeout`.
    func waitForLine(from: Int = 0, timeout: Duration,
                     where predicate: (String) -> Bool) async -> (index: Int, line: Line)? {
        let deadline = ContinuousClock.now + timeout
        var next = from
        while true {
            let snapshot = output
            while next < snapshot.count {
                if predicate(snapshot[next].text) { return (next, snapshot[next]) }
                next += 1
            }
            if ContinuousClock.now >= deadline { return nil }
            try? await Task.sleep(for: .milliseconds(20))
        }
    }

    /// The exit status, awaited until `timeout` (nil: still running).
    func waitForExit(timeout: Duration) async -> Int32? {
        let deadline = ContinuousClock.now + timeout
        while process.isRunning, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
        return exitStatus
    }

    /// Runs a command to completion (bounded by `timeout`, then SIGTERM); returns status and output.
    static func run(_ executable: String, _ arguments: [String], environment: [String: String] = [:],
                    timeout: Duration = .seconds(20)) async throws -> (status: Int32, output: String, errors: String) {
        let child = try ChildProcess(label: executable, executable: executable, arguments: arguments, environment: environment)
        child.closeInput()
        guard let status = await child.waitForExit(timeout: timeout) else {
            child.terminate()
            _ = await child.waitForExit(timeout: .seconds(5))
            return (-1, child.output.map(\.text).joined(separator: "\n"), "timed out after \(timeout)\n" + child.errorOutput)
        }
        // Let the reader threads drain the pipes.
        try? await Task.sleep(for: .milliseconds(30))
        return (status, child.output.map(\.text).joined(separator: "\n"), child.errorOutput)
    }

    private static let ignoreSIGPIPE: Void = {
        // A child that exited must not kill the test run when we write to its stdin.
        signal(SIGPIPE, SIG_IGN)
    }()

    private static func readLines(_ handle: FileHandle, _ onLine: @escaping @Sendable (String) -> Void) {
        let thread = Thread {
            var buffer = Data()
            while true {
                // Not `availableData`: it traps on EINTR. Retry interrupted reads instead.
                var bytes = [UInt8](repeating: 0, count: 65_536)
                let count = bytes.withUnsafeMutableBytes { read(handle.fileDescriptor, $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR { continue }
                if count <= 0 { break }
                let chunk = Data(bytes[0..<count])
                buffer.append(chunk)
                while let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                    onLine(String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self))
                    buffer.removeSubrange(buffer.startIndex...newline)
                }
            }
            if !buffer.isEmpty { onLine(String(decoding: buffer, as: UTF8.self)) }
        }
        thread.start()
    }
}
