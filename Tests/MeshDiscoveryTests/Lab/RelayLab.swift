import Foundation
import Testing

/// A relay lab (`scripts/lab/relaylab`): hosts A (1) and B (2) on networks of their own, which
/// reach a real Mosquitto in M (3) at ``brokerAddress`` and never each other, with the
/// observer (`scripts/lab/broker observe`) reading every topic for the whole lab.
///
/// The broker and the observer are children of the test (their PIDs are ours), so a scenario
/// can `kill -9` the broker and start it again; the lab's teardown stops whatever is left.
/// Daemons run through ``meshd`` (`scripts/lab/meshd`), as in the other labs.
final class RelayLab: @unchecked Sendable {
    /// One line the observer printed: a topic and the payload in hex.
    struct Observed: Sendable, Equatable {
        var topic: String
        var payloadHex: String
    }

    static let brokerAddress = "198.18.3.1"
    /// TLS with the lab CA's certificate.
    static let tlsPort = 8883
    /// TLS with a certificate from an unrelated CA.
    static let otherCAPort = 8884
    /// Plain MQTT.
    static let plainPort = 1883
    static let a = 1, b = 2, m = 3

    /// The lab of the suite being run (``RelayLabScope``).
    @TaskLocal static var current: RelayLab?

    let session: LabSession
    let meshd: MeshdLab
    private let lock = NSLock()
    private var brokers: [ChildProcess] = []
    /// One observer per broker run (mosquitto_sub ends when its connection is lost).
    private var observers: [ChildProcess] = []

    private init(session: LabSession) {
        self.session = session
        meshd = MeshdLab(session: session)
    }

    /// Whether the relay lab can run here: the namespace lab's needs, and Mosquitto's tools.
    static let unavailableReason: String? = {
        if let reason = LabEnvironment.unavailableReason { return reason }
        for tool in ["/usr/sbin/mosquitto", "/usr/bin/mosquitto_sub", "/usr/bin/mosquitto_pub",
                     "/usr/bin/mosquitto_passwd", "/usr/bin/openssl", "/usr/bin/ping"]
        where !FileManager.default.isExecutableFile(atPath: tool) {
            return "\(tool) is missing (run scripts/install-deps)"
        }
        return nil
    }()

    static var shouldRun: Bool { unavailableReason == nil || LabEnvironment.required }

    static var skipComment: Comment {
        Comment(rawValue: "relay lab skipped: \(unavailableReason ?? "-"); set MESH_REQUIRE_LAB=1 to make this a failure")
    }

    /// The running lab of this suite, or an error saying the suite's scope is missing.
    static func require() throws -> RelayLab {
        guard let lab = current else { throw LabError("no relay lab: the suite needs the .relayLab trait") }
        return lab
    }

    /// Sets the lab up, starts the broker and the observer (subscribed before this returns).
    static func start() async throws -> RelayLab {
        if let reason = unavailableReason { throw LabError("MESH_REQUIRE_LAB=1 but the relay lab cannot run: \(reason)") }
        let session = try await LabSession.startRelay()
        let lab = RelayLab(session: session)
        do {
            try await lab.restartBroker()
        } catch {
            lab.dumpLogs()
            await lab.shutdown()
            throw error
        }
        return lab
    }

    private static func launchBroker(session: LabSession) async throws -> ChildProcess {
        let broker = try ChildProcess(label: "mosquitto", executable: LabEnvironment.scripts + "/broker", arguments: ["run"],
                                      environment: ["MESH_LAB": session.directory])
        // Mosquitto opens its listeners before it logs that it runs.
        guard await broker.waitForLine(timeout: .seconds(10), where: { $0.contains(" running") }) != nil else {
            broker.terminate()
            throw LabError("mosquitto did not start in M: \(broker.output.map(\.text).suffix(20)) \(broker.errorOutput)")
        }
        return broker
    }

    /// Every line the broker logged, over all its runs.
    var brokerLog: [String] { lock.withLock { brokers }.flatMap(\.output).map(\.text) }

    /// The broker process running now, if any.
    var broker: ChildProcess? { lock.withLock { brokers.last { $0.isRunning } } }

    /// Starts the broker (again, after ``killBroker()``) and an observer subscribed to `#`.
    func restartBroker() async throws {
        let broker = try await Self.launchBroker(session: session)
        lock.withLock { brokers.append(broker) }
        let observer = try ChildProcess(label: "observer", executable: LabEnvironment.scripts + "/broker",
                                        arguments: ["observe"], environment: ["MESH_LAB": session.directory])
        lock.withLock { observers.append(observer) }
        // Mosquitto logs each subscription as "<time>: <client id> <qos> <filter>".
        guard await broker.waitForLine(timeout: .seconds(15), where: { $0.hasSuffix(": observer 0 #") }) != nil else {
            throw LabError("the observer did not subscribe to #: \(observer.errorOutput)")
        }
    }

    /// The observer of the broker running now.
    var observer: ChildProcess {
        get throws {
            guard let last = lock.withLock({ observers.last }) else { throw LabError("no observer was started") }
            return last
        }
    }

    /// `kill -9` of the broker (our own child, by its PID); returns once it is gone.
    func killBroker() async throws {
        let broker = try runningBroker()
        kill(broker.pid, SIGKILL)
        guard await broker.waitForExit(timeout: .seconds(5)) != nil else { throw LabError("mosquitto outlived SIGKILL") }
    }

    private func runningBroker() throws -> ChildProcess {
        guard let broker else { throw LabError("no broker is running") }
        return broker
    }

    /// A file of the broker's folder (`ca.crt`, `other-ca.crt`, `devA.password`, …).
    func brokerFile(_ name: String) -> String { session.directory + "/broker/" + name }

    /// The password of a broker account (devA, devB, observer).
    func password(_ user: String) throws -> String {
        try String(contentsOfFile: brokerFile(user + ".password"), encoding: .utf8)
    }

    /// Everything the observers printed so far, in order.
    var observed: [Observed] {
        lock.withLock { observers }.flatMap(\.output).compactMap { line in
            let parts = line.text.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: false)
            guard let topic = parts.first else { return nil }
            return Observed(topic: String(topic), payloadHex: parts.count > 1 ? String(parts[1]) : "")
        }
    }

    /// Waits (≤ `timeout`) until the observer printed `topic` with `payload`.
    func awaitObserved(topic: String, payload: String, timeout: Duration = .seconds(10)) async throws -> Bool {
        try await awaitObserved(topic: topic, payloadHex: Self.hex(Array(payload.utf8)), timeout: timeout)
    }

    /// Waits (≤ `timeout`) until the observer printed `topic` with the payload `payloadHex`.
    func awaitObserved(topic: String, payloadHex: String, timeout: Duration = .seconds(10)) async throws -> Bool {
        let line = topic + " " + payloadHex
        return try await observer.waitForLine(timeout: timeout, where: { $0 == line }) != nil
    }

    /// Runs `mosquitto_pub`/`mosquitto_sub` (`action`) in `host` as `user`, over TLS to port
    /// `port` with `caFile` (nil: plain MQTT) and `password` (default: the account's own).
    func client(_ host: Int, user: String, _ action: String, _ arguments: [String], port: Int = tlsPort,
                caFile: String? = "ca.crt", password: String? = nil, timeout: Duration = .seconds(20)) async throws
        -> (status: Int32, output: String, errors: String) {
        try await ChildProcess.run(LabEnvironment.scripts + "/broker", ["client", "\(host)", user, action] + arguments,
                                   environment: clientEnvironment(port: port, caFile: caFile, password: password), timeout: timeout)
    }

    /// Starts a `mosquitto_sub -d` in `host` as `user` on `topic`, and waits until the broker
    /// granted the subscription. It exits after `count` messages (or 20 s).
    func subscriber(_ host: Int, user: String, topic: String, count: Int = 1) async throws -> ChildProcess {
        let child = try ChildProcess(label: "mosquitto_sub in \(host)", executable: LabEnvironment.scripts + "/broker",
                                     arguments: ["client", "\(host)", user, "sub", "-d", "-v", "-t", topic,
                                                 "-C", "\(count)", "-W", "20"],
                                     environment: clientEnvironment(port: Self.tlsPort, caFile: "ca.crt", password: nil))
        guard await child.waitForLine(timeout: .seconds(10), where: { $0.contains("received SUBACK") }) != nil else {
            child.terminate()
            throw LabError("mosquitto_sub in host \(host) was not subscribed: \(child.output.map(\.text)) \(child.errorOutput)")
        }
        return child
    }

    private func clientEnvironment(port: Int, caFile: String?, password: String?) -> [String: String] {
        var environment = ["MESH_LAB": session.directory, "BROKER_PORT": "\(port)",
                           "BROKER_CAFILE": caFile.map { brokerFile($0) } ?? "-"]
        if let password { environment["BROKER_PASSWORD"] = password }
        return environment
    }

    /// One `ping` from `host` to `address` (1 s): true when it was answered.
    func ping(from host: Int, _ address: String) async throws -> Bool {
        let result = try await ChildProcess.run("/usr/sbin/ip", ["netns", "exec", session.name + "h\(host)",
                                                                 "ping", "-c", "1", "-W", "1", "-n", "-q", address],
                                                timeout: .seconds(5))
        return result.status == 0
    }

    /// Prints the broker's and the observer's output (used when a scenario failed).
    func dumpLogs() {
        for broker in lock.withLock({ brokers }) {
            print("---- mosquitto (pid \(broker.pid)) ----\n" + broker.output.suffix(80).map(\.text).joined(separator: "\n"))
        }
        for observer in lock.withLock({ observers }) {
            print("---- observer (pid \(observer.pid)): \(observer.output.count) lines, last 20 ----\n"
                  + observer.output.suffix(20).map(\.text).joined(separator: "\n") + "\n" + observer.errorOutput)
        }
        meshd.dumpDaemonLogs()
    }

    /// Stops the daemons, the observer and the broker, then tears the lab down.
    func shutdown() async {
        await meshd.stopAll()
        for observer in lock.withLock({ observers }) where observer.isRunning {
            observer.terminate()
            _ = await observer.waitForExit(timeout: .seconds(5))
        }
        for broker in lock.withLock({ brokers }) where broker.isRunning {
            broker.terminate()
            _ = await broker.waitForExit(timeout: .seconds(5))
        }
        await session.shutdown()
    }

    /// Runs one scenario of the suite's lab, printing every log when it throws; the daemons
    /// it started are stopped afterwards, so the next scenario starts from none.
    static func scenario(_ body: (RelayLab) async throws -> Void) async throws {
        let lab = try require()
        do {
            try await body(lab)
        } catch {
            lab.dumpLogs()
            await lab.meshd.stopAll()
            throw error
        }
        await lab.meshd.stopAll()
    }

    static func hex(_ bytes: [UInt8]) -> String {
        bytes.map { String(format: "%02x", $0) }.joined()
    }
}

/// Runs a suite inside one relay lab (``RelayLab/current``), set up once before its first test
/// and torn down after its last, also when a test fails.
struct RelayLabScope: SuiteTrait, TestScoping {
    var isRecursive: Bool { false }

    func provideScope(for test: Test, testCase: Test.Case?,
                      performing function: @Sendable () async throws -> Void) async throws {
        try LabEnvironment.requireRunnable()
        let lab = try await RelayLab.start()
        do {
            try await RelayLab.$current.withValue(lab) { try await function() }
        } catch {
            lab.dumpLogs()
            await lab.shutdown()
            throw error
        }
        if ProcessInfo.processInfo.environment["MESH_LAB_DUMP"] == "1" { lab.dumpLogs() }
        await lab.shutdown()
    }
}

extension Trait where Self == RelayLabScope {
    /// One relay lab for the whole suite (``RelayLab``).
    static var relayLab: Self { RelayLabScope() }
}
