#if canImport(Glibc)
import Glibc
#endif
import Foundation
import SessionMeshClient

/// A real `meshd` child process on 127.0.0.1 with its own temporary state folder and socket,
/// driven through real `meshctl` invocations. Every instance must be `stop()`ped (tests do it in
/// `defer`); the state folder survives a `kill9()` + `restart()` so crash recovery can be tested.
final class DaemonProcess: @unchecked Sendable {
    let name: String
    let folder: String
    let extraArguments: [String]
    /// A program meshd is started through (e.g. `nsenter` into a mount namespace); empty: none.
    let launcher: [String]
    private(set) var listen: String
    private var child: ChildProcess?

    var stateDirectory: String { folder + "/state" }
    var socketPath: String { folder + "/meshd.sock" }
    var pid: Int32? { child?.process.processIdentifier }

    /// Starts a daemon. `listen` defaults to a free port picked by the kernel; the bound address
    /// is read back from `meshctl status`, so a restart can reuse the same port.
    init(name: String, listen: String = "127.0.0.1:0", extraArguments: [String] = [], launcher: [String] = []) async throws {
        self.name = name
        self.folder = try TemporaryFolder.make()
        self.listen = listen
        self.extraArguments = extraArguments
        self.launcher = launcher
        do {
            try await start()
            self.listen = try await status()["listen"] as? String ?? listen
        } catch {
            stopNow()
            throw error
        }
    }

    /// Launches `meshd` and waits (≤ 10 s) for its `READY=1` (sent once its local API socket
    /// takes connections) on a notify socket of our own.
    func start() async throws {
        let notify = try NotifySocket(path: folder + "/notify-\(UInt32.random(in: 0...UInt32.max)).sock")
        let child = try ChildProcess("meshd", ["--user", "--state-dir", stateDirectory, "--socket", socketPath,
                                               "--listen", listen, "--name", name, "--log-level", "warning"] + extraArguments,
                                     environment: ["NOTIFY_SOCKET": notify.path], launcher: launcher)
        self.child = child
        let process = child.process
        guard try await notify.awaitMessage("READY=1", timeout: 10, gaveUp: { !process.isRunning }) else {
            throw DaemonProcessError("\(name): meshd did not report READY=1 within 10 s (running: \(process.isRunning))")
        }
    }

    /// SIGKILL, no clean-up by the daemon (crash simulation).
    func kill9() async throws {
        guard let child else { return }
        kill(child.process.processIdentifier, SIGKILL)
        _ = try await child.exitStatus()
        self.child = nil
    }

    /// SIGTERM: the daemon shuts down as a service manager would stop it; waits for its exit
    /// (up to 10 s, then SIGKILL). The state folder stays, for `restart()`.
    func terminate() async throws {
        guard let child else { return }
        child.terminate()
        _ = try await child.exitStatus()
        self.child = nil
    }

    /// Starts again on the same state folder and port.
    func restart() async throws { try await start() }

    /// Starts again on the same state folder, listening on `listen` (port 0: a new free port),
    /// so the addresses paired devices know of it lead nowhere.
    func restart(listen: String) async throws {
        self.listen = listen
        try await start()
        self.listen = try await status()["listen"] as? String ?? listen
    }

    /// SIGTERM, wait up to 5 s (then SIGKILL), and remove the temporary folder. Synchronous so
    /// tests can call it from `defer`, also when they fail.
    func stopNow() {
        if let child {
            let process = child.process
            kill(process.processIdentifier, SIGTERM)
            if !child.waitForExit(seconds: 5) { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }
        child = nil
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// Runs `meshctl --socket <this daemon> ARGS…` and returns its exit status and stdout.
    /// With `stdin`, that text is its standard input (else it inherits none).
    /// meshctl keeps its state (`send`'s default sessions) in this daemon's folder, not in `$HOME`.
    func meshctl(_ arguments: [String], timeout: Double = 15, stdin: String? = nil) async throws -> (status: Int32, output: String) {
        let environment = ProcessInfo.processInfo.environment.merging(["XDG_STATE_HOME": folder + "/meshctl-state"]) { _, new in new }
        return try await Self.run("meshctl", ["--socket", socketPath] + arguments, timeout: timeout, environment: environment,
                                  stdin: stdin)
    }

    /// `status --json` as a dictionary.
    func status() async throws -> [String: Any] {
        let result = try await meshctl(["status", "--json"])
        guard result.status == 0, let object = try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: Any]
        else { throw DaemonProcessError("\(name): status failed: \(result.output)") }
        return object
    }

    /// This daemon's device ID.
    func deviceID() async throws -> String {
        guard let id = try await status()["deviceID"] as? String else { throw DaemonProcessError("no deviceID") }
        return id
    }

    /// `peers --json` as an array of dictionaries.
    func peers() async throws -> [[String: Any]] {
        let result = try await meshctl(["peers", "--json"])
        guard result.status == 0, let data = result.output.data(using: .utf8) else {
            throw DaemonProcessError("\(name): peers failed: \(result.output)")
        }
        let object = try JSONSerialization.jsonObject(with: data)
        if let array = object as? [[String: Any]] { return array }
        if let wrapped = object as? [String: Any], let array = wrapped["peers"] as? [[String: Any]] { return array }
        throw DaemonProcessError("\(name): unexpected peers output")
    }

    /// The `channel` state of a peer, or nil when the peer is not listed.
    func channelState(of deviceID: String) async throws -> String? {
        try await peers().first { ($0["deviceID"] as? String) == deviceID }?["channel"] as? String
    }

    /// Waits until this daemon reports an active channel to `peer` (with `active: false`: no
    /// active channel); returns the seconds it took, or throws after `timeout`. Awaits the local
    /// API's `reachability` event (`channel-active`, `channel-down`) on an attachment of a feature
    /// no test uses, after checking the state it may already have.
    @discardableResult
    func waitForChannel(_ peer: String, active wanted: Bool = true, timeout: Double) async throws -> Double {
        let start = Date()
        let client = try await MeshClient.connect(socketPath: socketPath)
        do {
            let attachment = try await client.attach(features: ["test.channel-watch"], app: "test-harness")
            let active: Bool
            if try await client.peers().contains(where: { $0.deviceID == peer && $0.channel == .active }) == wanted {
                active = true
            } else {
                active = try await withDeadline(timeout - Date().timeIntervalSince(start)) {
                    for await event in attachment.events {
                        if case .reachability(let change) = event, change.peer == peer, change.featureID == nil,
                           change.reachable == wanted {
                            return true
                        }
                    }
                    return false
                } ?? false
            }
            await client.close()
            guard active else {
                throw DaemonProcessError("\(name): channel to \(peer.prefix(7)) not \(wanted ? "active" : "closed") within \(timeout) s")
            }
            return Date().timeIntervalSince(start)
        } catch {
            await client.close()
            throw error
        }
    }

    /// Creates a code on `self` and joins it from `other` (the code typed on `meshctl pair -`'s
    /// standard input, as a user would); returns both sides' JSON results. `whileCodeIsLive`
    /// runs once the code exists and before `other` joins (the time a user takes to type it).
    func pair(with other: DaemonProcess, replace: Bool = false,
              whileCodeIsLive: (() async throws -> Void)? = nil) async throws -> (inviter: [String: Any], joiner: String) {
        let flags = replace ? ["--replace"] : []
        let waiter = try ChildProcess("meshctl", ["--socket", socketPath, "pair", "--json"] + flags)
        defer { waiter.terminate(); waiter.process.waitUntilExit() }
        guard let first = try await waiter.readLine(timeout: 10),
              let codeLine = try JSONSerialization.jsonObject(with: Data(first.utf8)) as? [String: Any],
              let code = codeLine["code"] as? String
        else { throw DaemonProcessError("pair --json printed no code line") }
        try await whileCodeIsLive?()
        let join = try await other.meshctl(["pair", "-", "--address", listen] + flags, stdin: code + "\n")
        guard join.status == 0 else { throw DaemonProcessError("pair - failed: \(join.output)") }
        guard let last = try await waiter.readLine(timeout: 10),
              let paired = try JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any]
        else { throw DaemonProcessError("pair --json printed no result line") }
        return (paired, join.output)
    }

    /// Runs one of the package's executables (or, given an absolute path, that program) to
    /// completion (bounded by `timeout`), with `environment` instead of this process's and in
    /// `directory` when given.
    static func run(_ executable: String, _ arguments: [String], timeout: Double = 15,
                    environment: [String: String]? = nil, directory: String? = nil,
                    stdin: String? = nil) async throws -> (status: Int32, output: String) {
        guard let path = executable.hasPrefix("/") ? executable : ChildProcess.executable(executable) else {
            throw DaemonProcessError("\(executable) is not built")
        }
        return try await blocking {
            let process = Process()
            let pipe = Pipe()
            process.executableURL = URL(fileURLWithPath: path)
            process.arguments = arguments
            if let environment { process.environment = environment }
            if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
            process.standardOutput = pipe
            process.standardError = pipe
            let input = Pipe()
            if stdin != nil { process.standardInput = input }
            try process.run()
            if let stdin {
                input.fileHandleForWriting.write(Data(stdin.utf8))
                try? input.fileHandleForWriting.close()
            }
            let data = PipeReader.readToEnd(pipe.fileHandleForReading, timeout: timeout)
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
            return (process.terminationStatus, String(decoding: data, as: UTF8.self))
        }
    }
}

/// A failure of the process test harness, with a message saying what did not happen.
struct DaemonProcessError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
