#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An exclusive claim on a state folder for one `meshd` process: `flock` on `meshd.lock` in it.
///
/// Two daemons on one state folder would share one identity, rewrite each other's paired-device
/// list and send the same outbox twice; the second one must refuse to start instead. The kernel
/// drops the lock when the holding process exits in any way (also `kill -9`), so a crash never
/// leaves a stale lock behind. The file holds the holder's pid, for the error message only.
public final class StateDirectoryLock: Sendable {
    /// The lock file's name inside the state folder.
    public static let fileName = "meshd.lock"

    /// The lock file's path.
    public let path: String
    /// The mode the state folder had when it was tightened to `0700` on the way (log it), nil
    /// when it was private already.
    public let tightenedFrom: UInt16?
    private let descriptor: Int32

    /// Creates `stateDirectory` (mode `0700`) if missing, checks that it belongs to this user
    /// and that no one else may write to it, makes it `0700` if group or others could read it
    /// (`tightenedFrom`), and takes its lock; or throws an error that names the folder and what
    /// to do (the pid of the daemon holding it, the chmod or chown to run).
    public init(stateDirectory: String) throws(StateDirectoryLockError) {
        path = StateDirectory.path(stateDirectory, Self.fileName)
        do {
            try StateDirectory.prepare(stateDirectory)
        } catch {
            throw StateDirectoryLockError(.cannotCreate, path: stateDirectory, message: error.message)
        }
        do {
            tightenedFrom = try StateDirectory.secure(stateDirectory)
        } catch {
            throw StateDirectoryLockError(.unsafe, path: stateDirectory, message: error.message)
        }
        let fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd != -1 else {
            throw StateDirectoryLockError(.cannotCreate, path: path, message: "cannot open the state folder's lock file \(path): \(String(cString: strerror(errno)))")
        }
        var result: Int32
        repeat { result = flock(fd, LOCK_EX | LOCK_NB) } while result == -1 && errno == EINTR
        guard result == 0 else {
            let code = errno
            let holder = Self.readPID(fd).map { " (pid \($0))" } ?? ""
            close(fd)
            if code == EWOULDBLOCK {
                throw StateDirectoryLockError(.inUse, path: path, message: "another meshd\(holder) is already using the state folder \(stateDirectory); stop it, or give this one its own --state-dir")
            }
            throw StateDirectoryLockError(.cannotCreate, path: path, message: "cannot lock \(path): \(String(cString: strerror(code)))")
        }
        descriptor = fd
        let pid = Array("\(getpid())\n".utf8)
        if ftruncate(fd, 0) == 0 {
            _ = pid.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
        }
    }

    deinit { close(descriptor) }

    /// A mode as four octal digits, as the messages write it (`0755`).
    public static func octal(_ mode: UInt16) -> String { StateDirectory.octal(mode) }

    private static func readPID(_ fd: Int32) -> Int32? {
        var bytes = [UInt8](repeating: 0, count: 16)
        let count = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return nil }
        return Int32(String(decoding: bytes[0..<count].filter { (0x30...0x39).contains($0) }, as: UTF8.self))
    }
}
