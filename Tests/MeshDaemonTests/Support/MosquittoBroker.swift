#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing

/// A real Mosquitto broker run as the test's child on 127.0.0.1 and a free port (never the
/// system service), with a password file and, when asked, a TLS listener whose certificate a
/// test-made CA signs. `stop()` ends it by its PID; `start()` again on the same port.
final class MosquittoBroker: @unchecked Sendable {
    /// Nil when a broker can run here; otherwise why not.
    static let unavailableReason: String? = {
        for tool in ["/usr/sbin/mosquitto", "/usr/bin/mosquitto_passwd", "/usr/bin/openssl"]
        where !FileManager.default.isExecutableFile(atPath: tool) {
            return "\(tool) is missing (run scripts/install-deps)"
        }
        return nil
    }()
    static let required = ProcessInfo.processInfo.environment["MESH_REQUIRE_LAB"] == "1"
    /// Whether tests that need a broker run: where one can, or where CI requires it (then they fail).
    static var shouldRun: Bool {
        if let reason = unavailableReason, !required {
            print("skipped: a Mosquitto broker cannot run here: \(reason); set MESH_REQUIRE_LAB=1 to make this a failure")
            return false
        }
        return true
    }

    let folder: String
    let port: Int
    let tls: TestCertificateAuthority?
    private var process: Process?
    private var exited: DispatchSemaphore?
    private let lock = NSLock()

    /// Writes the broker's files into `folder` (accounts and passwords; an ACL confining each
    /// account to `prefix`) and starts it.
    init(folder: String, accounts: [String: String], prefix: String = "sessionmesh/", tls: Bool = false) throws {
        if let reason = Self.unavailableReason { throw BrokerError("cannot run mosquitto: \(reason)") }
        self.folder = folder
        self.port = try Self.freePort()
        self.tls = tls ? try TestCertificateAuthority(folder: folder + "/ca", name: "relay test CA") : nil
        let passwords = folder + "/passwords"
        FileManager.default.createFile(atPath: passwords, contents: Data())
        for (name, password) in accounts.sorted(by: { $0.key < $1.key }) {
            try SystemTool.run("/usr/bin/mosquitto_passwd", ["-b", passwords, name, password])
        }
        let acl = accounts.keys.sorted().map { "user \($0)\ntopic readwrite \(prefix)#\n" }.joined(separator: "\n")
        try acl.write(toFile: folder + "/acl", atomically: true, encoding: .utf8)
        var config = """
        per_listener_settings false
        allow_anonymous false
        password_file \(passwords)
        acl_file \(folder)/acl
        persistence false
        log_dest stderr
        log_type error
        log_type warning
        log_type notice
        log_type information
        listener \(port) 127.0.0.1

        """
        if getuid() == 0 { config += "user root\n" }
        if let ca = self.tls {
            let server = try ca.issue(commonName: "localhost", altNames: "DNS:localhost,IP:127.0.0.1", name: "broker")
            config += "cafile \(ca.certificate)\ncertfile \(server.certificate)\nkeyfile \(server.key)\n"
        }
        try config.write(toFile: folder + "/mosquitto.conf", atomically: true, encoding: .utf8)
        try start()
    }

    /// Starts the broker (again) and returns once it listens.
    func start() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/mosquitto")
        process.arguments = ["-c", folder + "/mosquitto.conf"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        let exited = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in exited.signal() }
        try process.run()
        lock.withLock {
            self.process = process
            self.exited = exited
        }
        // Mosquitto prints "Opening ipv4 listen socket on port N." then "mosquitto version … running".
        var text = ""
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline, !text.contains(" running") {
            guard let chunk = PipeReader.read(output.fileHandleForReading, timeout: deadline.timeIntervalSinceNow),
                  !chunk.isEmpty else { break }
            text += String(decoding: chunk, as: UTF8.self)
        }
        guard text.contains(" running") else {
            stop()
            throw BrokerError("mosquitto did not start on port \(port): \(text)")
        }
        // Keep draining its output so a chatty broker never blocks on a full pipe.
        output.fileHandleForReading.readabilityHandler = { handle in _ = handle.availableData }
    }

    /// Kills the broker by its PID (SIGKILL: a test's broker keeps nothing, and mosquitto takes
    /// a second or more to act on SIGTERM) and waits for it to exit.
    func stop() {
        let running = lock.withLock { () -> (Process, DispatchSemaphore)? in
            defer { self.process = nil; self.exited = nil }
            guard let process = self.process, let exited = self.exited else { return nil }
            return (process, exited)
        }
        guard let (process, exited) = running else { return }
        kill(process.processIdentifier, SIGKILL)
        if exited.wait(timeout: .now() + 5) == .success { process.waitUntilExit() }
    }

    deinit { stop() }

    /// A port nothing listens on now (bound to 0 and released).
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw BrokerError("socket: \(errno)") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw BrokerError("bind: \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

/// A CA made at test time with openssl (P-256 keys), and the certificates it issues.
struct TestCertificateAuthority {
    let folder: String
    let certificate: String
    let key: String

    init(folder: String, name: String) throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        self.folder = folder
        certificate = folder + "/ca.crt"
        key = folder + "/ca.key"
        try SystemTool.run("/usr/bin/openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                                                     "-keyout", key, "-out", certificate, "-days", "2", "-subj", "/CN=\(name)"])
    }

    /// A certificate for `commonName` with `altNames` (`DNS:…,IP:…`), signed by this CA.
    func issue(commonName: String, altNames: String, name: String) throws -> (certificate: String, key: String) {
        let key = "\(folder)/\(name).key", request = "\(folder)/\(name).csr", certificate = "\(folder)/\(name).crt"
        let extensions = "\(folder)/\(name).ext"
        try "subjectAltName=\(altNames)\n".write(toFile: extensions, atomically: true, encoding: .utf8)
        try SystemTool.run("/usr/bin/openssl", ["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                                                     "-keyout", key, "-out", request, "-subj", "/CN=\(commonName)"])
        try SystemTool.run("/usr/bin/openssl", ["x509", "-req", "-in", request, "-CA", self.certificate, "-CAkey", self.key,
                                                     "-CAcreateserial", "-out", certificate, "-days", "2", "-extfile", extensions])
        if getuid() == 0 { chmod(key, 0o644) }
        return (certificate, key)
    }
}

struct BrokerError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
