import ArgumentParser
import Foundation
import MeshCore
import SessionMeshClient

/// `meshctl`: the command-line tool for a running `meshd`, over its local socket.
///
/// Exit codes: 0 ok, 1 the daemon reported an error, 2 usage, 3 the daemon cannot be reached,
/// 130 interrupted.
struct Meshctl: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "meshctl",
        abstract: "Control a running SessionMesh daemon (meshd).",
        discussion: """
            Exit codes: 0 ok, 1 the daemon reported an error, 2 usage error, 3 cannot reach the daemon, \
            130 interrupted.
            """,
        version: SessionMeshVersion.current,
        subcommands: [StatusCommand.self, PeersCommand.self, PairCommand.self, UnpairCommand.self, PingCommand.self,
                      SendCommand.self, WatchCommand.self, SnapshotCommand.self, QueueCommand.self, SessionsCommand.self])

    @Option(help: ArgumentHelp("The daemon's socket. Default: the user daemon's ($XDG_RUNTIME_DIR/sessionmesh/meshd.sock; without XDG_RUNTIME_DIR, meshd.sock in its state folder, $XDG_STATE_HOME/sessionmesh or ~/.local/state/sessionmesh) if it exists, else /run/sessionmesh/meshd.sock.", valueName: "PATH"))
    var socket: String?

    func validate() throws {
        if socket?.isEmpty == true {
            throw ValidationError("--socket is empty; give the daemon's socket path, or leave the option out for the default")
        }
    }

    /// The system daemon's socket.
    static let systemSocket = "/run/sessionmesh/meshd.sock"

    /// The socket to use: `--socket`, else the user daemon's if present, else the system one.
    var socketPath: String {
        if let socket { return socket }
        return userSocket.flatMap { FileManager.default.fileExists(atPath: $0) ? $0 : nil } ?? Self.systemSocket
    }

    /// Where `meshd --user` puts its socket in this environment, if it can be told.
    private var userSocket: String? {
        let environment = ProcessInfo.processInfo.environment
        if let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") {
            return runtime + "/sessionmesh/meshd.sock"
        } else if let state = environment["XDG_STATE_HOME"], state.hasPrefix("/") {
            return state + "/sessionmesh/meshd.sock"
        } else if let home = environment["HOME"], home.hasPrefix("/") {
            return home + "/.local/state/sessionmesh/meshd.sock"
        }
        return nil
    }

    /// Connects to `socketPath`. Without `--socket`, when neither default socket exists, the
    /// error names both places looked at: naming only the system one's sent people who run
    /// `meshd --user` looking in /run.
    func connect() async throws -> MeshClient {
        do {
            return try await MeshClient.connect(socketPath: socketPath)
        } catch let error as MeshClientError where error.kind == .unreachable && socket == nil {
            let looked = [userSocket, Self.systemSocket].compactMap { $0 }
            guard let userSocket, !looked.contains(where: { FileManager.default.fileExists(atPath: $0) }) else { throw error }
            throw MeshClientError(kind: .unreachable, code: error.code,
                                  message: "cannot reach meshd: no socket file (is meshd running? looked for the user daemon's \(userSocket) and the system daemon's \(Self.systemSocket); --socket PATH names another)")
        }
    }
}

/// Runs `meshctl` with its own exit-code contract (ArgumentParser's default usage code is 64).
@main
enum MeshctlEntry {
    static func main() async {
        // Line-buffered even into a pipe or a file: a command that prints and then waits (`pair`
        // showing its code, `watch` printing events) must show each line when it is printed, not
        // when the buffer fills or the command exits.
        Output.lineBufferStandardOutput()
        do {
            var command = try Meshctl.parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch let failure as CLIFailure {
            failure.report()
            exit(failure.exitCode)
        } catch let code as ExitCode {
            exit(code.rawValue)
        } catch {
            if Meshctl.exitCode(for: error) == .success { Meshctl.exit(withError: error) }
            FileHandle.standardError.write(Data((Meshctl.fullMessage(for: error) + "\n").utf8))
            exit(CLIFailure.usage)
        }
    }
}
