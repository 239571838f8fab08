#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import NIOCore

/// The file-system side of the local API socket: the parent folder, stale sockets, the mode, and
/// removal on shutdown. All C calls go through `systemCall`.
struct SocketFile: Sendable {
    /// The socket path.
    let path: String

    /// Longest path `sockaddr_un.sun_path` holds, leaving room for the terminating NUL.
    static let maximumPathLength = 107
    /// Suffix of the temporary name the socket is bound at before it gets its mode.
    static let temporarySuffix = ".new"

    /// Where the socket is bound before it is renamed into place.
    var temporaryPath: String { path + Self.temporarySuffix }

    /// Makes `path` ready to bind: parent folder created `0700` if missing; an existing socket
    /// removed only if nothing answers on it; anything else in the way is an error.
    func prepare() throws(LocalAPIServerError) {
        guard temporaryPath.utf8.count <= Self.maximumPathLength else {
            throw .pathTooLong(path, limit: Self.maximumPathLength - Self.temporarySuffix.utf8.count)
        }
        if !parent.isEmpty, !FileManager.default.fileExists(atPath: parent) {
            // mkdir(2) per missing level, so the error is errno's ("Permission denied"), not
            // Foundation's "The operation could not be completed".
            var current = parent.hasPrefix("/") ? "" : "."
            for component in parent.split(separator: "/") {
                current += "/" + component
                do {
                    try systemCall("mkdir", current) { mkdir(current, 0o700) == 0 || errno == EEXIST ? 0 : -1 }
                } catch {
                    throw .cannotPrepare(path, "cannot create folder \(current): \(String(cString: strerror(error.errno)))")
                }
            }
        }
        try removeIfStale(path, refuseIfLive: true)
        try removeIfStale(temporaryPath, refuseIfLive: false)
    }

    /// The socket's folder.
    var parent: String { (path as NSString).deletingLastPathComponent }

    /// Why binding the temporary socket failed, in words: NIO's text for the common case read
    /// "bind(descriptor:ptr:bytes:): Permission denied) (errno: 13)".
    func bindFailure(_ error: any Error) -> String {
        if let io = error as? IOError, io.errnoCode == EACCES || io.errnoCode == EPERM {
            return "permission denied: this user may not create files in \(parent); choose another --socket"
        }
        return "\(error)"
    }

    /// Gives the freshly bound temporary socket its mode and moves it to `path`; returns the
    /// inode, so `remove(inode:)` deletes only this daemon's socket.
    func install(mode: UInt16) throws(LocalAPIServerError) -> UInt64 {
        do {
            try systemCall("chmod", temporaryPath) { chmod(temporaryPath, mode_t(mode)) }
            try systemCall("rename", path) { rename(temporaryPath, path) }
        } catch {
            _ = unlink(temporaryPath)
            throw .cannotPrepare(path, error.description)
        }
        return Self.inode(of: path) ?? 0
    }

    /// Deletes the socket if it is still the one with `inode`.
    func remove(inode: UInt64) {
        guard let current = Self.inode(of: path), current == inode else { return }
        _ = unlink(path)
    }

    // MARK: - Helpers

    private func removeIfStale(_ candidate: String, refuseIfLive: Bool) throws(LocalAPIServerError) {
        var info = stat()
        guard lstat(candidate, &info) == 0 else { return }
        guard (info.st_mode & S_IFMT) == S_IFSOCK else { throw .notASocket(candidate) }
        if Self.answers(candidate) {
            if refuseIfLive { throw .anotherDaemonLive(candidate) }
        }
        do {
            try systemCall("unlink", candidate) { unlink(candidate) }
        } catch {
            throw .cannotPrepare(candidate, "cannot remove the stale socket: \(error.description)")
        }
    }

    /// Whether something accepts connections at `path` (a non-blocking connect succeeds or is
    /// merely delayed by a full backlog).
    static func answers(_ path: String) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        guard var address = unixAddress(path) else { return false }
        let result = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        if result == 0 { return true }
        return errno == EAGAIN || errno == EINPROGRESS
    }

    /// A `sockaddr_un` for `path`, or nil when it does not fit.
    static func unixAddress(_ path: String) -> sockaddr_un? {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard bytes.count < capacity else { return nil }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
        }
        return address
    }

    private static func inode(of path: String) -> UInt64? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return UInt64(info.st_ino)
    }
}
