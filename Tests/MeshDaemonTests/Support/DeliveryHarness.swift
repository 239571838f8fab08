#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MeshLocalAPI
import SessionMesh
import SessionMeshClient

/// Two real `meshd` on 127.0.0.1 (or `listen`, e.g. `[::1]:0`), paired through `meshctl pair`,
/// channel active both ways.
struct DaemonPair {
    let a: DaemonProcess
    let b: DaemonProcess
    let idA: String
    let idB: String

    static func start(listen: String = "127.0.0.1:0", extraA: [String] = [], extraB: [String] = [],
                      launcherA: [String] = [], launcherB: [String] = []) async throws -> DaemonPair {
        let a = try await DaemonProcess(name: "alpha", listen: listen, extraArguments: extraA, launcher: launcherA)
        let b: DaemonProcess
        do {
            b = try await DaemonProcess(name: "beta", listen: listen, extraArguments: extraB, launcher: launcherB)
        } catch {
            a.stopNow()
            throw error
        }
        do {
            let idA = try await a.deviceID()
            let idB = try await b.deviceID()
            _ = try await a.pair(with: b)
            try await a.waitForChannel(idB, timeout: 5)
            try await b.waitForChannel(idA, timeout: 5)
            return DaemonPair(a: a, b: b, idA: idA, idB: idB)
        } catch {
            a.stopNow()
            b.stopNow()
            throw error
        }
    }

    func stopNow() {
        a.stopNow()
        b.stopNow()
    }
}

/// `meshctl watch --json` on a daemon, its lines parsed as JSON objects. Reads are bounded by
/// `poll(2)`, so a silent watch never blocks a test past its deadline.
final class WatchProcess: @unchecked Sendable {
    let process = Process()
    private let pipe = Pipe()
    private let lock = NSLock()
    private var buffer: [UInt8] = []
    private var ended = false

    convenience init(_ daemon: DaemonProcess, feature: String, extra: [String] = []) throws {
        try self.init(socket: daemon.socketPath, feature: feature, extra: extra)
    }

    /// A watch on the daemon whose local API socket is `socket` (one not started as a DaemonProcess).
    init(socket: String, feature: String, extra: [String] = []) throws {
        guard let path = ChildProcess.executable("meshctl") else { throw DaemonProcessError("meshctl is not built") }
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = ["--socket", socket, "watch", "--feature", feature, "--json"] + extra
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
    }

    var pid: Int32 { process.processIdentifier }

    /// The next stdout line within `timeout` seconds, or nil (timeout or end of output).
    func readLine(timeout: Double) async throws -> String? {
        try await blocking { self.readLineNow(timeout: timeout) }
    }

    private func readLineNow(timeout: Double) -> String? {
        let deadline = Date().addingTimeInterval(timeout)
        let fd = pipe.fileHandleForReading.fileDescriptor
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            if let line = takeLine() { return line }
            if lock.withLock({ ended }) { return nil }
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { return nil }
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, Int32(min(left, 1) * 1000) + 1)
            guard ready > 0 else { continue }
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            lock.withLock {
                if count <= 0 { ended = true } else { buffer.append(contentsOf: chunk[0..<count]) }
            }
        }
    }

    private func takeLine() -> String? {
        lock.withLock {
            guard let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) else { return nil }
            let line = String(decoding: buffer[0..<newline], as: UTF8.self)
            buffer.removeSubrange(0...newline)
            return line
        }
    }

    /// The next JSON line within `timeout` seconds, or nil.
    func next(timeout: Double) async throws -> [String: Any]? {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            guard let line = try await readLine(timeout: deadline.timeIntervalSinceNow) else { return nil }
            if let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] { return object }
        }
        return nil
    }

    /// Skips lines until one of `type` arrives; throws after `timeout` seconds.
    @discardableResult
    func next(type: String, timeout: Double, where matches: ([String: Any]) -> Bool = { _ in true }) async throws -> [String: Any] {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let record = try await next(timeout: deadline.timeIntervalSinceNow), record["type"] as? String == type, matches(record) {
                return record
            }
        }
        throw DaemonProcessError("watch: no \(type) line within \(timeout) s")
    }

    /// The next `count` envelope lines (other lines skipped); throws after `timeout` seconds with
    /// how many came.
    func envelopes(_ count: Int, timeout: Double) async throws -> [[String: Any]] {
        var collected: [[String: Any]] = []
        let deadline = Date().addingTimeInterval(timeout)
        while collected.count < count, Date() < deadline {
            if let record = try await next(timeout: deadline.timeIntervalSinceNow), record["type"] as? String == "envelope" {
                collected.append(record)
            }
        }
        guard collected.count == count else {
            throw DaemonProcessError("watch: \(collected.count) of \(count) envelopes within \(timeout) s")
        }
        return collected
    }

    /// SIGKILL and reap (synchronous, for `defer`).
    func stopNow() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}

/// Test-side helpers for building envelopes and snapshots.
enum ProcessFixtures {
    static let session = UUID(uuidString: "0D1E2F30-4A5B-4C6D-8E9F-A0B1C2D3E4F5")!

    static func envelope(_ sequence: UInt64, feature: String = "demo", source: String = "test-app",
                         payload: String? = nil) -> AnySessionSyncEnvelope {
        AnySessionSyncEnvelope(
            metadata: SessionSyncMetadata(sessionID: session, featureID: feature, sourcePeerID: source, eventID: UUID(),
                                          sequence: sequence, causalTimestamp: Date(), payloadType: "text"),
            payload: Data((payload ?? "message \(sequence)").utf8))
    }

    static func snapshot(revision: UInt64, feature: String = "demo", state: String) -> AnySessionSyncSnapshot {
        AnySessionSyncSnapshot(metadata: envelope(revision, feature: feature).metadata, revision: revision, state: Data(state.utf8))
    }

    /// Waits (≤ `timeout`) until `client`'s attachment reports `peer` reachable for `feature`.
    static func awaitFeatureReachable(_ attachment: MeshAttachment, peer: String, feature: String, timeout: Double) async throws {
        if attachment.peers.contains(where: { $0.deviceID == peer && $0.reachable }) { return }
        let found = try await withDeadline(timeout) {
            for await event in attachment.events {
                if case .reachability(let change) = event, change.peer == peer, change.featureID == feature, change.reachable {
                    return true
                }
            }
            return false
        }
        guard found == true else { throw DaemonProcessError("\(feature) on \(peer.prefix(7)) not reachable within \(timeout) s") }
    }
}

/// Runs `body`, returning nil if it has not finished within `seconds` (the body is cancelled).
func withDeadline<T: Sendable>(_ seconds: Double, _ body: @escaping @Sendable () async throws -> T) async throws -> T? {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: .seconds(seconds))
            return nil
        }
        let first = try await group.next() ?? nil
        group.cancelAll()
        return first
    }
}
