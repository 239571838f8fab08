#if canImport(Glibc)
import Glibc
#endif
import MeshMQTT

/// Reads the relay account's password from `relay_password_file` with the checks the identity
/// key gets: no symbolic link, a regular file of the daemon's user, no access for group or
/// others. The file holds the password alone; one trailing line break is not part of it.
enum RelayPasswordFile {
    /// Longer than this is not a password file.
    static let maximumBytes = 1024

    /// The password; its bytes exist only in the returned value (the read buffer is zeroed).
    static func read(_ path: String) throws(ConfigurationError) -> MQTTPassword {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else {
            let code = errno
            if code == ELOOP { throw failure(path, "is a symbolic link; give the file itself") }
            throw failure(path, "cannot be opened: \(String(cString: strerror(code)))")
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw failure(path, "cannot be read: \(String(cString: strerror(errno)))") }
        guard info.st_mode & S_IFMT == S_IFREG else { throw failure(path, "is not a regular file") }
        guard info.st_mode & 0o077 == 0 else {
            throw failure(path, "has mode \(String(info.st_mode & 0o777, radix: 8)): group or others can access it; run chmod 600 \(path)")
        }
        guard info.st_uid == geteuid() else {
            throw failure(path, "belongs to uid \(info.st_uid), not to meshd's user (uid \(geteuid())); run chown \(geteuid()) \(path)")
        }
        var buffer = [UInt8](repeating: 0, count: maximumBytes + 1)
        var total = 0
        while total < buffer.count {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + total, $0.count - total) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else {
                buffer.withUnsafeMutableBytes(zeroBytes)
                throw failure(path, "cannot be read: \(String(cString: strerror(errno)))")
            }
            if count == 0 { break }
            total += count
        }
        defer { buffer.withUnsafeMutableBytes(zeroBytes) }
        guard total <= maximumBytes else { throw failure(path, "is larger than \(maximumBytes) bytes; it should hold the password alone") }
        var end = total
        if end > 0, buffer[end - 1] == 0x0A { end -= 1 }
        if end > 0, buffer[end - 1] == 0x0D { end -= 1 }
        guard end > 0 else { throw failure(path, "is empty; write the relay account's password into it") }
        guard !buffer[0..<end].contains(0x0A), !buffer[0..<end].contains(0) else {
            throw failure(path, "holds more than one line; it should hold the password alone")
        }
        var bytes = Array(buffer[0..<end])
        return MQTTPassword(taking: &bytes)
    }

    private static func failure(_ path: String, _ message: String) -> ConfigurationError {
        ConfigurationError(file: path, key: "relay_password_file", message: message)
    }
}
