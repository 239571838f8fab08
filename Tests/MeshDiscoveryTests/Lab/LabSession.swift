import Foundation

/// One running lab (`scripts/lab/lab up N`) and the probes a test started in it.
///
/// The lab script tears itself down when its stdin closes, so even a crashed test run leaves
/// nothing behind; ``shutdown()`` closes it explicitly and waits (bounded).
final class LabSession: @unchecked Sendable {
    let labProcess: ChildProcess
    let directory: String
    let name: String
    private var probes: [LabProbe] = []

    private init(labProcess: ChildProcess, directory: String, name: String) {
        self.labProcess = labProcess
        self.directory = directory
        self.name = name
    }

    /// Starts a lab with `hosts` hosts and waits (≤ 30 s) until it is ready.
    static func start(hosts: Int, ipv6: Bool = false) async throws -> LabSession {
        var arguments = ["up", "\(hosts)"]
        if ipv6 { arguments.append("--ipv6") }
        return try await start(script: "lab", arguments: arguments,
                               describe: "\(hosts) hosts\(ipv6 ? " (IPv4+IPv6)" : "")")
    }

    /// Starts a relay lab (`scripts/lab/relaylab up`: A and B joined only through M, the
    /// broker's namespace) and waits (≤ 30 s) until it is ready. The broker is not started.
    static func startRelay() async throws -> LabSession {
        try await start(script: "relaylab", arguments: ["up"], describe: "relay lab (A, B, broker host M)")
    }

    private static func start(script: String, arguments: [String], describe: String) async throws -> LabSession {
        let lab = try ChildProcess(label: script, executable: LabEnvironment.scripts + "/" + script, arguments: arguments,
                                   environment: ["MESH_LAB_MAX_SECONDS": "300"])
        let clock = ContinuousClock()
        let began = clock.now
        guard let ready = await lab.waitForLine(timeout: .seconds(30), where: { $0.hasPrefix("READY ") }) else {
            lab.closeInput()
            _ = await lab.waitForExit(timeout: .seconds(15))
            throw LabError("lab did not come up within 30 s: \(lab.errorOutput)")
        }
        let fields = Dictionary(ready.line.text.split(separator: " ").dropFirst().compactMap { field -> (String, String)? in
            let parts = field.split(separator: "=", maxSplits: 1)
            return parts.count == 2 ? (String(parts[0]), String(parts[1])) : nil
        }, uniquingKeysWith: { first, _ in first })
        guard let directory = fields["MESH_LAB"], let name = fields["LAB_NAME"] else {
            throw LabError("unexpected READY line: \(ready.line.text)")
        }
        print("lab \(name): \(describe) ready in \(LabSession.ms(clock.now - began)) ms")
        return LabSession(labProcess: lab, directory: directory, name: name)
    }

    /// Runs `scripts/lab/<script> args…` against this lab; throws when it fails.
    @discardableResult
    func run(_ script: String, _ arguments: [String], timeout: Duration = .seconds(20)) async throws -> String {
        let result = try await ChildProcess.run(LabEnvironment.scripts + "/" + script, arguments,
                                                environment: ["MESH_LAB": directory], timeout: timeout)
        guard result.status == 0 else {
            throw LabError("scripts/lab/\(script) \(arguments.joined(separator: " ")) failed (\(result.status)): \(result.errors)")
        }
        return result.output
    }

    /// Starts `mesh-discovery-probe` in host `host` (`bare`: with no bus and no avahi-daemon).
    func probe(host: Int, name: String, deviceID: String, port: UInt16, duration: Double = 60,
               bare: Bool = false, extra: [String] = []) throws -> LabProbe {
        guard let probe = LabEnvironment.probePath else { throw LabError("mesh-discovery-probe not built") }
        var arguments = bare ? ["--bare", "\(host)"] : ["\(host)"]
        arguments += [probe, "--name", name, "--device-id", deviceID, "--port", "\(port)",
                      "--duration", "\(duration)", "--log-level", "debug"] + extra
        let child = try ChildProcess(label: name, executable: LabEnvironment.scripts + "/exec", arguments: arguments,
                                     environment: ["MESH_LAB": directory])
        let started = LabProbe(child)
        probes.append(started)
        return started
    }

    /// Stops every probe (stdin closed, then SIGTERM to our child) and tears the lab down.
    func shutdown() async {
        for probe in probes { probe.child.closeInput() }
        for probe in probes where await probe.child.waitForExit(timeout: .seconds(5)) == nil {
            probe.child.terminate()
            _ = await probe.child.waitForExit(timeout: .seconds(5))
        }
        labProcess.closeInput()
        if await labProcess.waitForExit(timeout: .seconds(20)) == nil {
            labProcess.terminate()
            _ = await labProcess.waitForExit(timeout: .seconds(10))
        }
    }

    /// Runs `body` with a fresh lab, always shutting it down afterwards.
    static func with(hosts: Int, ipv6: Bool = false, _ body: (LabSession) async throws -> Void) async throws {
        try LabEnvironment.requireRunnable()
        let lab = try await LabSession.start(hosts: hosts, ipv6: ipv6)
        do {
            try await body(lab)
        } catch {
            lab.dumpProbeLogs()
            await lab.shutdown()
            throw error
        }
        await lab.shutdown()
    }

    /// Prints each probe's stderr (used when a scenario failed).
    func dumpProbeLogs() {
        for probe in probes {
            print("---- \(probe.child.label) stdout ----\n" + probe.child.output.map(\.text).joined(separator: "\n"))
            print("---- \(probe.child.label) stderr ----\n" + probe.child.errorOutput)
        }
    }

    static func ms(_ d: Duration) -> Int64 {
        d.components.seconds * 1000 + d.components.attoseconds / 1_000_000_000_000_000
    }
}
