#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Whole-file reads and crash-safe replacement of small state files.
///
/// `write` goes to `path.tmp` (created `0600`), is fsynced, renamed over `path`, and the folder
/// is fsynced, so after a crash the file is either the old or the new version, never a mix.
enum AtomicFile {
    /// An errno-based failure, with the operation that failed.
    struct Failure: Error, CustomStringConvertible {
        var operation: String
        var errno: Int32
        var description: String { "\(operation) failed: \(String(cString: strerror(errno)))" }
    }

    /// The file's contents, or nil when it does not exist.
    static func read(_ path: String) throws(Failure) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 {
            if errno == ENOENT { return nil }
            throw Failure(operation: "open", errno: errno)
        }
        defer { close(fd) }
        var result: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16_384)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw Failure(operation: "read", errno: errno)
            }
            if n == 0 { break }
            result.append(contentsOf: chunk[0..<n])
            guard result.count <= 16 << 20 else { throw Failure(operation: "read (file larger than 16 MiB)", errno: EFBIG) }
        }
        return result
    }

    /// Permission bits of `path`, or nil when it does not exist.
    static func mode(_ path: String) throws(Failure) -> UInt32? {
        var info = stat()
        if stat(path, &info) != 0 {
            if errno == ENOENT { return nil }
            throw Failure(operation: "stat", errno: errno)
        }
        return UInt32(info.st_mode) & 0o777
    }

    /// Replaces `path` with `bytes` atomically, mode `0600`.
    static func write(_ bytes: [UInt8], to path: String) throws(Failure) {
        let temporary = path + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Failure(operation: "create \(temporary)", errno: errno) }
        var closed = false
        defer { if !closed { close(fd); unlink(temporary) } }
        guard fchmod(fd, 0o600) == 0 else { throw Failure(operation: "chmod", errno: errno) }
        var written = 0
        while written < bytes.count {
            let n = bytes[written...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw Failure(operation: "write", errno: errno)
            }
            written += n
        }
        guard fsync(fd) == 0 else { throw Failure(operation: "fsync", errno: errno) }
        closed = true
        guard close(fd) == 0 else { unlink(temporary); throw Failure(operation: "close", errno: errno) }
        guard rename(temporary, path) == 0 else {
            let saved = errno
            unlink(temporary)
            throw Failure(operation: "rename", errno: saved)
        }
        syncFolder(of: path)
    }

    private static func syncFolder(of path: String) {
        let folder = path.lastIndex(of: "/").map { String(path[..<$0]) } ?? "."
        let fd = open(folder.isEmpty ? "/" : folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        _ = fsync(fd)
        close(fd)
    }
}
