import ArgumentParser
import Foundation

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
        subcommands: [StatusCommand.self, PeersCommand.self, PairCommand.self, UnpairCommand.self, PingCommand.self,
                      SendCommand.self, WatchCommand.self, SnapshotCommand.self, QueueCommand.self, SessionsCommand.self])

    @Option(help: ArgumentHelp("The daemon's socket. Default: the user daemon's ($XDG_RUNTIME_DIR/sessionmesh/meshd.sock, or ~/.local/state/sessionmesh/meshd.sock without XDG_RUNTIME_DIR) if it exists, else /run/sessionmesh/meshd.sock.", valueName: "PATH"))
    var socket: String?

    /// The socket to use: `--socket`, else the user daemon's if present, else the system one.
    var socketPath: String {
        if let socket { return socket }
        let environment = ProcessInfo.processInfo.environment
        var candidates: [String] = []
        if let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") {
            candidates.append(runtime + "/sessionmesh/meshd.sock")
        } else if let state = environment["XDG_STATE_HOME"], state.hasPrefix("/") {
            candidates.append(state + "/sessionmesh/meshd.sock")
        } else if let home = environment["HOME"], home.hasPrefix("/") {
            candidates.append(home + "/.local/state/sessionmesh/meshd.sock")
        }
        return candidates.first { FileManager.default.fileExists(atPath: $0) } ?? "/run/sessionmesh/meshd.sock"
    }
}

/// Runs `meshctl` with its own exit-code contract (ArgumentParser's default usage code is 64).
@main
enum MeshctlEntry {
    static func main() async {
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
