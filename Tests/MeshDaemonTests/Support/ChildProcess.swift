#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// A built executable of this package run as a child process, with its stdout read line by line.
final class ChildProcess: @unchecked Sendable {
    let process = Process()
    private let output = Pipe()
    private let lock = NSLock()
    private var buffer = Data()
    /// Signalled by the process's termination handler (and re-signalled by each waiter).
    private let exited = DispatchSemaphore(value: 0)

    /// The folder holding the package's built executables (next to the test bundle).
    static let binDirectory: URL = {
        let executable = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        var folder = executable.deletingLastPathComponent()
        while folder.path != "/", !FileManager.default.fileExists(atPath: folder.appendingPathComponent("meshctl").path) {
            folder = folder.deletingLastPathComponent()
        }
        return folder
    }()

    static func executable(_ name: String) -> String? {
        let path = binDirectory.appendingPathComponent(name).path
        return FileManager.default.isExecutableFile(atPath: path) ? path : nil
    }

    /// Starts the package's executable `name`; with a `launcher` (an absolute program and its
    /// arguments, e.g. `nsenter … --`), through it.
    init(_ name: String, _ arguments: [String], environment: [String: String] = [:], stderrToStdout: Bool = false,
         launcher: [String] = []) throws {
        guard let path = Self.executable(name) else { throw POSIXError(.ENOENT) }
        if let program = launcher.first {
            process.executableURL = URL(fileURLWithPath: program)
            process.arguments = Array(launcher.dropFirst()) + [path] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: path)
            process.arguments = arguments
        }
        var environment = environment
        // A release build of meshd takes the options for tests only in a test run.
        if arguments.contains("--clock-offset-ms"), environment["MESH_TEST_RUN"] == nil { environment["MESH_TEST_RUN"] = "1" }
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        process.standardOutput = output
        process.standardError = stderrToStdout ? output : FileHandle.nullDevice
        process.terminationHandler = { [exited] _ in exited.signal() }
        try process.run()
    }

    /// Blocks until the process has exited (true) or `seconds` passed (false).
    func waitForExit(seconds: Double) -> Bool {
        guard exited.wait(timeout: .now() + seconds) == .success else { return false }
        exited.signal()
        process.waitUntilExit()
        return true
    }

    /// The next stdout line, or nil at end of output / after `seconds`.
    func readLine(timeout seconds: Double = 5) async throws -> String? {
        try await blocking {
            let deadline = Date().addingTimeInterval(seconds)
            while Date() < deadline {
                if let line = self.takeLine() { return line }
                guard let chunk = PipeReader.read(self.output.fileHandleForReading,
                                                  timeout: deadline.timeIntervalSinceNow) else { return nil }
                if chunk.isEmpty { return self.takeLine() }
                self.lock.lock()
                self.buffer.append(chunk)
                self.lock.unlock()
            }
            return nil
        }
    }

    private func takeLine() -> String? {
        lock.lock()
        defer { lock.unlock() }
        guard let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) else { return nil }
        let line = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
        buffer.removeSubrange(buffer.startIndex...newline)
        return line
    }

    func interrupt() { kill(process.processIdentifier, SIGINT) }

    func terminate() { kill(process.processIdentifier, SIGTERM) }

    /// Waits for exit (up to 10 s, then kills it) and returns the status.
    func exitStatus() async throws -> Int32 {
        try await blocking {
            if !self.waitForExit(seconds: 10) { self.process.terminate() }
            self.process.waitUntilExit()
            return self.process.terminationStatus
        }
    }
}
