#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// The repository's shell scripts run as a user runs them.
enum ScriptProcess {
    /// The checkout's root folder.
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Runs `scripts/NAME arguments` under bash for at most `timeout` seconds. On timeout the
    /// script gets SIGTERM, so its trap stops what it started, and SIGKILL only if it hangs on.
    static func run(_ name: String, _ arguments: [String], environment: [String: String] = [:],
                    timeout: Double) async throws -> (status: Int32, output: String, seconds: Double) {
        try await blocking {
            let process = Process()
            let pipe = Pipe()
            process.executableURL = URL(fileURLWithPath: "/bin/bash")
            process.arguments = [root.appendingPathComponent("scripts/" + name).path] + arguments
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
            process.currentDirectoryURL = root
            process.standardOutput = pipe
            process.standardError = pipe
            let started = Date()
            try process.run()
            var output = PipeReader.readToEnd(pipe.fileHandleForReading, timeout: timeout)
            if process.isRunning {
                kill(process.processIdentifier, SIGTERM)
                output.append(PipeReader.readToEnd(pipe.fileHandleForReading, timeout: 15))
                if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            }
            process.waitUntilExit()
            return (process.terminationStatus, String(decoding: output, as: UTF8.self), Date().timeIntervalSince(started))
        }
    }
}
