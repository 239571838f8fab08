import Foundation

/// A lab (``LabSession``) running real `meshd` daemons in its hosts (`scripts/lab/meshd`),
/// driven with `meshctl` (`scripts/lab/meshctl`). Every daemon a test starts is stopped by
/// its own PID before the lab is torn down, also when the test fails.
final class MeshdLab: @unchecked Sendable {
    /// What `meshctl peers --json` reports about one paired device.
    struct Peer: Decodable, Sendable {
        struct Address: Decodable, Sendable, Equatable {
            var address: String
            var source: String
        }

        var deviceID: String
        var name: String
        var channel: String
        var addresses: [Address]
        var lastHandshake: Double?
        var reachable: Bool
    }

    /// What `meshctl status --json` reports.
    struct Status: Decodable, Sendable {
        var deviceID: String
        var name: String
        var counters: [String: UInt64]
    }

    let session: LabSession
    private let lock = NSLock()
    private var daemons: [(host: Int, process: ChildProcess)] = []
    private var watchers: [ChildProcess] = []

    init(session: LabSession) {
        self.session = session
    }

    static let port = 47470
    static let hostNames = [1: "host-a", 2: "host-b", 3: "host-c", 4: "host-d", 5: "host-e"]

    /// `meshd` and `meshctl` next to the test binary (or `MESHD` / `MESHCTL`).
    static let meshdPath = LabEnvironment.product("meshd", environment: "MESHD")
    static let meshctlPath = LabEnvironment.product("meshctl", environment: "MESHCTL")

    /// Runs `body` with a fresh lab of `hosts` hosts; stops every daemon and the lab afterwards.
    static func with(hosts: Int, _ body: (MeshdLab) async throws -> Void) async throws {
        guard meshdPath != nil, meshctlPath != nil else {
            throw LabError("meshd and meshctl must be built next to the tests (swift build --build-tests)")
        }
        try await LabSession.with(hosts: hosts) { session in
            let lab = MeshdLab(session: session)
            do {
                try await body(lab)
            } catch {
                lab.dumpDaemonLogs()
                await lab.stopAll()
                throw error
            }
            if ProcessInfo.processInfo.environment["MESH_LAB_DUMP"] == "1" { lab.dumpDaemonLogs() }
            await lab.stopAll()
        }
    }

    /// The IPv4 address host `k` starts with.
    static func address(_ host: Int) -> String { "198.18.0.\(host)" }

    private var environment: [String: String] {
        ["MESH_LAB": session.directory, "MESHD": Self.meshdPath ?? "", "MESHCTL": Self.meshctlPath ?? ""]
    }

    /// Starts meshd in `host` (name host-a/b/c) and waits (≤ 10 s) for its `READY=1`.
    @discardableResult
    func start(_ host: Int, extra: [String] = []) async throws -> ChildProcess {
        let name = Self.hostNames[host] ?? "host\(host)"
        let notify = try NotifySocket(path: session.directory + "/notify-\(host)-\(UInt32.random(in: 0...UInt32.max)).sock")
        let child = try ChildProcess(label: "meshd \(name)", executable: LabEnvironment.scripts + "/meshd",
                                     arguments: ["\(host)", "--name", name, "--log-level", "debug"] + extra,
                                     environment: environment.merging(["NOTIFY_SOCKET": notify.path]) { _, new in new })
        lock.withLock { daemons.append((host, child)) }
        guard await notify.awaitMessage("READY=1", timeout: 10, gaveUp: { !child.isRunning }) else {
            throw LabError("meshd in host \(host) did not come up: \(child.errorOutput.suffix(2000))")
        }
        return child
    }

    /// The running daemon of `host`, if any.
    func daemon(_ host: Int) -> ChildProcess? {
        lock.withLock { daemons.last { $0.host == host && $0.process.isRunning }?.process }
    }

    /// SIGTERM to the daemon of `host` (our own child), waiting ≤ 10 s for it to exit.
    func stop(_ host: Int) async {
        let mine = lock.withLock { daemons.filter { $0.host == host }.map(\.process) }
        for child in mine where child.isRunning {
            child.closeInput()
            child.terminate()
            if await child.waitForExit(timeout: .seconds(10)) == nil { kill(child.pid, SIGKILL) }
        }
    }

    /// Stops every watch and daemon this lab started.
    func stopAll() async {
        for watcher in lock.withLock({ watchers }) where watcher.isRunning {
            watcher.terminate()
            _ = await watcher.waitForExit(timeout: .seconds(5))
        }
        let hosts = lock.withLock { Set(daemons.map(\.host)) }
        for host in hosts.sorted() { await stop(host) }
    }

    /// Runs `meshctl ARGS` against host `host`'s daemon.
    func meshctl(_ host: Int, _ arguments: [String], timeout: Duration = .seconds(20)) async throws -> (status: Int32, output: String, errors: String) {
        try await ChildProcess.run(LabEnvironment.scripts + "/meshctl", ["\(host)"] + arguments,
                                   environment: environment, timeout: timeout)
    }

    /// `meshctl status --json` of `host`.
    func status(_ host: Int) async throws -> Status {
        let result = try await meshctl(host, ["status", "--json"], timeout: .seconds(5))
        guard result.status == 0 else { throw LabError("meshctl status on host \(host) failed: \(result.errors)") }
        return try JSONDecoder().decode(Status.self, from: Data(result.output.utf8))
    }

    /// `meshctl peers --json` of `host`.
    func peers(_ host: Int) async throws -> [Peer] {
        let result = try await meshctl(host, ["peers", "--json"], timeout: .seconds(5))
        guard result.status == 0 else { throw LabError("meshctl peers on host \(host) failed: \(result.errors)") }
        return try JSONDecoder().decode([Peer].self, from: Data(result.output.utf8))
    }

    /// The peer named `name` as `host` sees it.
    func peer(_ host: Int, named name: String) async throws -> Peer? {
        try await peers(host).first { $0.name == name }
    }

    /// Polls (every 50 ms, ≤ `timeout`) until `condition` holds; returns when it first did.
    @discardableResult
    func waitUntil(_ what: String, timeout: Duration, _ condition: () async throws -> Bool) async throws -> ContinuousClock.Instant {
        let deadline = ContinuousClock.now + timeout
        while true {
            if (try? await condition()) == true { return .now }
            guard ContinuousClock.now < deadline else { throw LabError("timed out after \(timeout) waiting for \(what)") }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Waits until hosts `a` and `b` both show an active channel to each other.
    @discardableResult
    func waitActive(_ a: Int, _ b: Int, timeout: Duration,
                    where extra: @escaping (Peer, Peer) -> Bool = { _, _ in true }) async throws -> ContinuousClock.Instant {
        let nameA = Self.hostNames[a] ?? "", nameB = Self.hostNames[b] ?? ""
        return try await waitUntil("an active channel between \(nameA) and \(nameB)", timeout: timeout) {
            guard let ab = try await peer(a, named: nameB), ab.channel == "active",
                  let ba = try await peer(b, named: nameA), ba.channel == "active" else { return false }
            return extra(ab, ba)
        }
    }

    /// Pairs `joiner` with `inviter` by code: with `--address` when `byAddress`, else by
    /// code alone. Returns the code that was used.
    @discardableResult
    func pair(inviter: Int, joiner: Int, byAddress: Bool) async throws -> String {
        let (code, waiting) = try await showCode(inviter)
        var arguments = ["pair", code, "--json"]
        if byAddress { arguments += ["--address", "\(Self.address(inviter)):\(Self.port)"] }
        let joined = try await meshctl(joiner, arguments)
        guard joined.status == 0 else {
            waiting.terminate()
            throw LabError("meshctl pair on host \(joiner) failed (\(joined.status)): \(joined.output) \(joined.errors)")
        }
        guard await waiting.waitForExit(timeout: .seconds(10)) == 0 else {
            waiting.terminate()
            throw LabError("the inviter's meshctl pair did not report success: \(waiting.output.map(\.text)) \(waiting.errorOutput)")
        }
        return code
    }

    /// Starts `meshctl pair --json` on `host`; returns the code and the waiting process.
    func showCode(_ host: Int) async throws -> (code: String, process: ChildProcess) {
        let waiting = try ChildProcess(label: "meshctl pair on \(host)", executable: LabEnvironment.scripts + "/meshctl",
                                       arguments: ["\(host)", "pair", "--json", "--expires", "60"], environment: environment)
        guard let first = await waiting.waitForLine(timeout: .seconds(10), where: { $0.contains("\"code\"") }),
              let object = try? JSONSerialization.jsonObject(with: Data(first.line.text.utf8)) as? [String: Any],
              let code = object["code"] as? String else {
            waiting.terminate()
            throw LabError("meshctl pair on host \(host) printed no code: \(waiting.errorOutput)")
        }
        return (code, waiting)
    }

    /// `meshctl watch --feature F --json` on `host` (an app attached to F; it acknowledges
    /// what it prints). Waits (≤ 10 s) until it is attached.
    func watch(_ host: Int, feature: String) async throws -> ChildProcess {
        let child = try ChildProcess(label: "watch on \(host)", executable: LabEnvironment.scripts + "/meshctl",
                                     arguments: ["\(host)", "watch", "--feature", feature, "--json"], environment: environment)
        lock.withLock { watchers.append(child) }
        guard await child.waitForLine(timeout: .seconds(10), where: { Self.jsonObject($0)?["type"] as? String == "attached" }) != nil else {
            throw LabError("meshctl watch on host \(host) did not attach: \(child.errorOutput)")
        }
        return child
    }

    /// The payloads of the envelopes a watch printed so far, in order.
    static func envelopePayloads(_ watch: ChildProcess) -> [String] {
        watch.output.compactMap { line in
            guard let object = jsonObject(line.text), object["type"] as? String == "envelope" else { return nil }
            return object["payload"] as? String
        }
    }

    /// A JSON object line, or nil.
    static func jsonObject(_ text: String) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any]
    }

    /// Prints every daemon's log (used when a scenario failed).
    func dumpDaemonLogs() {
        for (host, child) in lock.withLock({ daemons }) {
            print("---- meshd host \(host) (pid \(child.pid)) stderr ----\n" + child.errorOutput.suffix(12_000))
        }
    }
}

extension LabEnvironment {
    /// An executable product next to the test binary (SwiftPM puts all products in one
    /// folder), or the path in `environment`.
    static func product(_ name: String, environment variable: String) -> String? {
        if let explicit = ProcessInfo.processInfo.environment[variable] { return explicit }
        let exe = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        var folder = exe.deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = folder.appendingPathComponent(name).path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            folder = folder.deletingLastPathComponent()
        }
        return nil
    }
}
