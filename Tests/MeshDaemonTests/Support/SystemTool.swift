import Foundation

/// Runs a system tool (openssl, mosquitto_passwd, useradd, …) to completion, synchronously, for
/// test set-up that is not async: its output (stdout and stderr together), or a
/// `DaemonProcessError` naming the command and what it printed when it exits non-zero.
enum SystemTool {
    @discardableResult
    static func run(_ path: String, _ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: output, as: UTF8.self)
        guard process.terminationStatus == 0 else {
            throw DaemonProcessError("\(path) \(arguments.joined(separator: " ")) failed: \(text)")
        }
        return text
    }
}
