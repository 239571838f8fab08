import Foundation
import Synchronization

/// A child process of the test with piped stdin/stdout/stderr, read on background threads.
/// Stdout lines are kept (with the time they arrived) so tests can await one with a deadline.
final class ChildProcess: Sendable {
    struct Line: Sendable {
        var text: String
        var receivedAt: ContinuousClock.Instant
    }

    private let spawned: SpawnedProcess
    private let lines = Mutex<[Line]>([])
    private let errorText = Mutex<String>("")
    /// Open output pipes (stdout, stderr); 0 once both reached end of file.
    private let openPipes = Mutex(2)
    /// Wakes waiters on every line, end of a pipe and the exit.
    private let changed = ChangeSignal()
    let label: String

    init(label: String, executable: String, arguments: [String], environment: [String: String] = [:]) throws {
        ChildProcess.ignoreSIGPIPE
        self.label = label
        var env = ProcessInfo.processInfo.environment
        for (key, value) in environment { env[key] = value }
        spawned = try SpawnedProcess(executable: executable, arguments: arguments, environment: env)
        spawned.awaitExit { [changed] in changed.notify() }
        ChildProcess.readLines(spawned.output, onEnd: pipeEnded) { [self] text in
            lines.withLock { $0.append(Line(text: text, receivedAt: .now)) }
            changed.notify()
        }
        ChildProcess.readLines(spawned.errors, onEnd: pipeEnded) { [self] text in
            errorText.withLock { $0 += text + "\n" }
        }
    }

    private func pipeEnded() {
        openPipes.withLock { $0 -= 1 }
        changed.notify()
    }

    /// Awaits `condition` (checked at the start and after every change: a line, the end of a
    /// pipe, the exit) until `deadline`; returns its last value.
    private func awaitCondition(until deadline: ContinuousClock.Instant, _ condition: () -> Bool) async -> Bool {
        while true {
            let generation = changed.generation
            if condition() { return true }
            if ContinuousClock.now >= deadline { return false }
            await changed.wait(after: generation, until: deadline)
        }
    }

    /// Every stdout line so far.
    var output: [Line] { lines.withLock { $0 } }
    /// Everything written to stderr so far.
    var errorOutput: String { errorText.withLock { $0 } }
    var isRunning: Bool { spawned.exitStatus == nil }
    var exitStatus: Int32? { spawned.exitStatus }
    var pid: Int32 { spawned.pid }

    /// Writes one line to the child's stdin (ignored if the child is gone).
    func send(_ line: String) { spawned.write(Array((line + "\n").utf8)) }

    /// Closes the child's stdin.
    func closeInput() { spawned.closeInput() }

    /// Sends SIGTERM to this child (our own PID) if it still runs.
    func terminate() {
        if isRunning { kill(spawned.pid, SIGTERM) }
    }

    /// The first stdout line at index ≥ `from` matching `predicate`, awaited until `timeout`.
    func waitForLine(from: Int = 0, timeout: Duration,
                     where predicate: (String) -> Bool) async -> (index: Int, line: Line)? {
        var next = from
        var found: (index: Int, line: Line)?
        _ = await self.awaitCondition(until: .now + timeout) {
            let snapshot = output
            while next < snapshot.count {
                if predicate(snapshot[next].text) { found = (next, snapshot[next]); return true }
                next += 1
            }
            return false
        }
        return found
    }

    /// The exit status, awaited until `timeout` (nil: still running).
    func waitForExit(timeout: Duration) async -> Int32? {
        _ = await self.awaitCondition(until: .now + timeout) { !isRunning }
        return exitStatus
    }

    /// Runs a command to completion (bounded by `timeout`, then SIGTERM); returns status and output.
    static func run(_ executable: String, _ arguments: [String], environment: [String: String] = [:],
                    timeout: Duration = .seconds(20)) async throws -> (status: Int32, output: String, errors: String) {
        let child = try ChildProcess(label: executable, executable: executable, arguments: arguments, environment: environment)
        child.closeInput()
        guard let status = await child.waitForExit(timeout: timeout) else {
            child.terminate()
            _ = await child.waitForExit(timeout: .seconds(5))
            return (-1, child.output.map(\.text).joined(separator: "\n"), "timed out after \(timeout)\n" + child.errorOutput)
        }
        // Everything it wrote is read once both pipes end (bounded: a process it left behind
        // may hold them open).
        _ = await child.awaitCondition(until: .now + .seconds(1)) { child.openPipes.withLock { $0 == 0 } }
        return (status, child.output.map(\.text).joined(separator: "\n"), child.errorOutput)
    }

    private static let ignoreSIGPIPE: Void = {
        // A child that exited must not kill the test run when we write to its stdin.
        signal(SIGPIPE, SIG_IGN)
    }()

    private static func readLines(_ descriptor: Int32, onEnd: @escaping @Sendable () -> Void,
                                  _ onLine: @escaping @Sendable (String) -> Void) {
        let thread = Thread {
            var buffer = Data()
            while true {
                // Not `availableData`: it traps on EINTR. Retry interrupted reads instead.
                var bytes = [UInt8](repeating: 0, count: 65_536)
                let count = bytes.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR { continue }
                if count <= 0 { break }
                let chunk = Data(bytes[0..<count])
                buffer.append(chunk)
                while let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                    onLine(String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self))
                    buffer.removeSubrange(buffer.startIndex...newline)
                }
            }
            if !buffer.isEmpty { onLine(String(decoding: buffer, as: UTF8.self)) }
            close(descriptor)
            onEnd()
        }
        thread.start()
    }
}

/// Wakes the tasks waiting for something to change, each also woken at its own deadline (a
/// dispatch timer, so a waiter never polls). A waiter passes the generation it saw before it
/// checked its condition, so a change in between is never missed.
final class ChangeSignal: Sendable {
    private struct State {
        var generation: UInt64 = 0
        var nextWaiter: UInt64 = 0
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
    }
    private let state = Mutex(State())

    var generation: UInt64 { state.withLock { $0.generation } }

    /// Records a change and wakes every waiter.
    func notify() {
        let woken = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.generation &+= 1
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for waiter in woken { waiter.resume() }
    }

    /// Returns once the generation differs from `seen`, or at `deadline`.
    func wait(after seen: UInt64, until deadline: ContinuousClock.Instant) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let id: UInt64? = state.withLock { state in
                guard state.generation == seen else { return nil }
                state.nextWaiter &+= 1
                state.waiters[state.nextWaiter] = continuation
                return state.nextWaiter
            }
            guard let id else { return continuation.resume() }
            let (seconds, attoseconds) = ContinuousClock.now.duration(to: deadline).components
            let nanoseconds = max(0, Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))
            DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) { [self] in
                self.state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
            }
        }
    }
}
