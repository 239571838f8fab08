import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A child started with `posix_spawn`, its stdin, stdout and stderr on pipes; the descriptors
/// above 2 are closed in the child (`posix_spawn_file_actions_addclosefrom_np`, glibc 2.34).
///
/// Not Foundation's `Process`: its `run()` on Linux (Swift 6.3.1) can crash the test process
/// with signal 11 while it lists `/proc/self/fd` (docs/TESTING.md), and the labs start hundreds
/// of children per run.
final class SpawnedProcess: Sendable {
    let pid: pid_t
    /// The read ends of the child's stdout and stderr (the caller reads and closes them).
    let output: Int32
    let errors: Int32
    private let input: Mutex<Int32?>
    private let status = Mutex<Int32?>(nil)

    struct SpawnError: Error, CustomStringConvertible {
        var description: String
    }

    init(executable: String, arguments: [String], environment: [String: String]) throws {
        var stdinPipe: [Int32] = [-1, -1], stdoutPipe: [Int32] = [-1, -1], stderrPipe: [Int32] = [-1, -1]
        guard Self.pipeClosedOnExec(&stdinPipe) else { throw SpawnError(description: "pipe2: \(String(cString: strerror(errno)))") }
        guard Self.pipeClosedOnExec(&stdoutPipe) else {
            stdinPipe.forEach { close($0) }
            throw SpawnError(description: "pipe2: \(String(cString: strerror(errno)))")
        }
        guard Self.pipeClosedOnExec(&stderrPipe) else {
            (stdinPipe + stdoutPipe).forEach { close($0) }
            throw SpawnError(description: "pipe2: \(String(cString: strerror(errno)))")
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, stdinPipe[0], 0)
        posix_spawn_file_actions_adddup2(&actions, stdoutPipe[1], 1)
        posix_spawn_file_actions_adddup2(&actions, stderrPipe[1], 2)
        if let closeFrom = Self.addCloseFrom { _ = closeFrom(&actions, 3) }

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var child: pid_t = 0
        let rc = posix_spawn(&child, executable, &actions, nil, argv, envp)
        close(stdinPipe[0])
        close(stdoutPipe[1])
        close(stderrPipe[1])
        guard rc == 0 else {
            [stdinPipe[1], stdoutPipe[0], stderrPipe[0]].forEach { close($0) }
            throw SpawnError(description: "cannot start \(executable): \(String(cString: strerror(rc)))")
        }
        pid = child
        input = Mutex(stdinPipe[1])
        output = stdoutPipe[0]
        errors = stderrPipe[0]
    }

    private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 on), looked up at run time:
    /// Glibc's module does not declare it.
    private static let addCloseFrom: AddCloseFrom? = {
        guard let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") else { return nil }
        return unsafeBitCast(symbol, to: AddCloseFrom.self)
    }()

    /// A pipe whose ends close on exec (`pipe2` needs _GNU_SOURCE, which Glibc's module lacks):
    /// only children this type starts could inherit them in between, and those close every
    /// descriptor above 2.
    private static func pipeClosedOnExec(_ ends: inout [Int32]) -> Bool {
        guard pipe(&ends) == 0 else { return false }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        return true
    }

    /// The exit code, or the signal's number if a signal ended it (as `Process.terminationStatus`);
    /// nil while it runs.
    var exitStatus: Int32? { status.withLock { $0 } }

    /// Waits for the exit on a thread of its own and then calls `exited`. Call once.
    func awaitExit(_ exited: @escaping @Sendable () -> Void) {
        let thread = Thread { [self] in
            var raw: Int32 = 0
            while waitpid(pid, &raw, 0) < 0 {
                if errno != EINTR {
                    raw = 0x7f00  // not ours to wait for any more: report it ended
                    break
                }
            }
            let signal = raw & 0x7f
            let code = signal == 0 ? (raw >> 8) & 0xff : signal
            status.withLock { $0 = code }
            exited()
        }
        thread.start()
    }

    /// Writes `bytes` to the child's stdin (ignored once it is closed or the child is gone).
    func write(_ bytes: [UInt8]) {
        input.withLock { descriptor in
            guard let descriptor else { return }
            var offset = 0
            while offset < bytes.count {
                let written = bytes[offset...].withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
                if written < 0 && errno == EINTR { continue }
                if written <= 0 { return }
                offset += written
            }
        }
    }

    /// Closes the child's stdin.
    func closeInput() {
        input.withLock { descriptor in
            if let open = descriptor { close(open) }
            descriptor = nil
        }
    }

    deinit {
        closeInput()
    }
}
