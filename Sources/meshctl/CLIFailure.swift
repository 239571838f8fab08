import ArgumentParser
import Foundation
import MeshLocalAPI
import SessionMeshClient

/// A failure `meshctl` reports and exits with.
struct CLIFailure: Error {
    /// The daemon answered with an error.
    static let daemonError: Int32 = 1
    /// The command line was wrong.
    static let usage: Int32 = 2
    /// The daemon could not be reached.
    static let unreachable: Int32 = 3
    /// Ctrl-C.
    static let interrupted: Int32 = 130

    /// Process exit status.
    var exitCode: Int32
    /// Stable code (the daemon's, or `unreachable`, …).
    var code: String
    /// Sentence for the user.
    var message: String
    /// Print as a JSON line `{"error": {...}}` instead of text.
    var json = false

    /// Maps any error of a daemon call to a failure.
    init(_ error: any Error, json: Bool) {
        self.json = json
        if let client = error as? MeshClientError {
            code = client.code
            message = client.message
            switch client.kind {
            case .daemon: exitCode = Self.daemonError
            case .unreachable, .connectionClosed: exitCode = Self.unreachable
            // Refused by the client before sending (e.g. a message over the frame limit).
            case .invalidArgument: exitCode = Self.usage
            default: exitCode = Self.daemonError
            }
        } else if let failure = error as? CLIFailure {
            self = failure
            self.json = json
        } else {
            code = "internal"
            message = "\(error)"
            exitCode = Self.daemonError
        }
    }

    init(exitCode: Int32, code: String, message: String, json: Bool) {
        self.exitCode = exitCode
        self.code = code
        self.message = message
        self.json = json
    }

    /// Writes the failure: a JSON line on stdout with `--json`, else `meshctl: …` on stderr.
    func report() {
        if json {
            Output.jsonLine(["error": LocalAPIErrorBody(code: code, message: message)])
        } else {
            FileHandle.standardError.write(Data("meshctl: \(message)\n".utf8))
        }
    }
}

/// Connects to the daemon, runs `body`, closes; every error becomes a `CLIFailure`.
func withDaemon<T>(_ parent: Meshctl, json: Bool, _ body: (MeshClient) async throws -> T) async throws -> T {
    let client: MeshClient
    do {
        client = try await parent.connect()
    } catch {
        throw CLIFailure(error, json: json)
    }
    do {
        let result = try await body(client)
        await client.close()
        return result
    } catch let code as ExitCode {
        await client.close()
        throw code
    } catch {
        await client.close()
        throw CLIFailure(error, json: json)
    }
}
