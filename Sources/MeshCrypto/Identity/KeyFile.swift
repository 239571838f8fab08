#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `read(2)`, named apart from ``KeyFile/read(path:)``.
private func posixRead(_ fd: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int {
    #if canImport(Glibc)
    Glibc.read(fd, buffer, count)
    #else
    Darwin.read(fd, buffer, count)
    #endif
}

/// The on-disk device key and the file-system calls that read and create it.
///
/// Format (73 bytes):
///
///     +--------+---------+------------------+-----------------+------------------------------+
///     | "SMDK" | version | private key (32) | public key (32) | SHA-256(previous 69)[0..<4]  |
///     +--------+---------+------------------+-----------------+------------------------------+
///
/// Every system call of this file goes through ``KeyFile/system(_:_:)``, which turns `-1`/errno
/// into a ``CryptoError``.
enum KeyFile {
    static let magic: [UInt8] = Array("SMDK".utf8)
    static let version: UInt8 = 1
    static let length = 4 + 1 + 32 + 32 + 4

    /// The file's bytes. The caller zeroes them after writing. Built in one buffer of the final
    /// size, so no temporary copy of the private key is left behind.
    static func encode(_ pair: X25519KeyPair) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: length)
        out.withUnsafeMutableBytes { buffer in
            buffer.copyBytes(from: magic)
            buffer[4] = version
            pair.privateKey.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: buffer[5..<37]).copyMemory(from: $0) }
            pair.publicKey.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: buffer[37..<69]).copyMemory(from: $0) }
            var digest = [UInt8](repeating: 0, count: 32)
            digest.withUnsafeMutableBytes { Sodium.sha256([UnsafeRawBufferPointer(rebasing: buffer[0..<69])], into: $0) }
            UnsafeMutableRawBufferPointer(rebasing: buffer[69..<73]).copyBytes(from: digest[0..<4])
        }
        return out
    }

    static func decode(_ bytes: [UInt8], path: String) throws -> X25519KeyPair {
        let advice = "it was left untouched; restore it from a backup, or move it away to create a new identity (paired devices must then pair again)"
        guard bytes.count >= length else {
            throw CryptoError(.corruptKeyFile, "device key file \(path) is truncated (\(bytes.count) of \(length) bytes); \(advice)")
        }
        guard bytes.count == length else {
            throw CryptoError(.corruptKeyFile, "device key file \(path) is longer than \(length) bytes; \(advice)")
        }
        guard Array(bytes[0..<4]) == magic else {
            throw CryptoError(.corruptKeyFile, "\(path) is not a SessionMesh device key file; \(advice)")
        }
        guard bytes[4] == version else {
            throw CryptoError(.corruptKeyFile, "device key file \(path) has unknown version \(bytes[4]); \(advice)")
        }
        // Hashed in place: a copy of the first 69 bytes would be a copy of the private key.
        var digest = [UInt8](repeating: 0, count: 32)
        bytes.withUnsafeBytes { buffer in
            digest.withUnsafeMutableBytes { Sodium.sha256([UnsafeRawBufferPointer(rebasing: buffer[0..<69])], into: $0) }
        }
        guard Array(digest[0..<4]) == Array(bytes[69..<73]) else {
            throw CryptoError(.corruptKeyFile, "device key file \(path) is corrupt (checksum mismatch); \(advice)")
        }
        let privateKey = SecretBytes(count: 32) { out in
            bytes.withUnsafeBytes { out.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[5..<37])) }
        }
        let pair = try X25519KeyPair(privateKey: privateKey)
        guard pair.publicKey == Array(bytes[37..<69]) else {
            throw CryptoError(.corruptKeyFile, "device key file \(path) is corrupt (public key does not match); \(advice)")
        }
        return pair
    }

    /// Runs a system call returning -1 on failure.
    @discardableResult
    static func system<T: BinaryInteger>(_ what: @autoclosure () -> String, _ call: () -> T) throws -> T {
        let result = call()
        guard result != -1 else {
            let code = errno
            throw CryptoError(.keyFileIO, "\(what()): \(String(cString: strerror(code)))")
        }
        return result
    }

    /// The file's bytes, or nil when it does not exist. Refuses links, non-regular files and
    /// files readable or writable by group or others, or owned by another user. The bytes hold
    /// the private key: the caller zeroes them (`Sodium.zero`) once decoded.
    static func read(path: String) throws -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        if fd == -1 {
            let code = errno
            if code == ENOENT { return nil }
            if code == ELOOP {
                throw CryptoError(.insecureKeyFile, "device key file \(path) is a symbolic link; refusing to follow it")
            }
            throw CryptoError(.keyFileIO, "cannot open device key file \(path): \(String(cString: strerror(code)))")
        }
        defer { close(fd) }
        var info = stat()
        try system("cannot stat device key file \(path)") { fstat(fd, &info) }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw CryptoError(.insecureKeyFile, "device key path \(path) is not a regular file")
        }
        guard info.st_mode & 0o077 == 0 else {
            let mode = String(info.st_mode & 0o777, radix: 8)
            throw CryptoError(.insecureKeyFile,
                              "device key file \(path) has mode \(mode): group or others can access it; run `chmod 600 \(path)` if you trust it, or create a new identity")
        }
        guard info.st_uid == geteuid() else {
            throw CryptoError(.insecureKeyFile, "device key file \(path) is owned by another user (uid \(info.st_uid))")
        }
        var bytes = [UInt8](repeating: 0, count: length + 1)
        var total = 0
        do {
            while total < bytes.count {
                let count = try bytes.withUnsafeMutableBytes { buffer in
                    try system("cannot read device key file \(path)") {
                        posixRead(fd, buffer.baseAddress! + total, buffer.count - total)
                    }
                }
                if count == 0 { break }
                total += count
            }
        } catch {
            Sodium.zero(&bytes)
            throw error
        }
        // Shortened in place (no copy): the caller zeroes the one buffer.
        bytes.removeLast(bytes.count - total)
        return bytes
    }

    /// Writes `bytes` to a new file at `path` (mode 0600) atomically: a temporary file in the same
    /// directory is written and synced, then hard-linked to `path`. `link` fails when `path`
    /// exists, so an existing file is never replaced (unlike `rename`). Returns false when
    /// another process created `path` first.
    static func createExclusively(path: String, bytes: [UInt8]) throws -> Bool {
        let suffix = Sodium.randomBytes(count: 6).map { String($0, radix: 16) }.joined()
        let temporary = "\(path).tmp-\(suffix)"
        let fd = try system("cannot create \(temporary) (does the directory exist and is it writable?)") {
            open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        }
        var linked = false
        defer { if !linked { unlink(temporary) } }
        do {
            defer { close(fd) }
            try system("cannot set mode 0600 on \(temporary)") { fchmod(fd, 0o600) }
            var written = 0
            while written < bytes.count {
                written += try bytes.withUnsafeBytes { buffer in
                    try system("cannot write \(temporary)") {
                        write(fd, buffer.baseAddress! + written, buffer.count - written)
                    }
                }
            }
            try system("cannot sync \(temporary)") { fsync(fd) }
        }
        if link(temporary, path) == -1 {
            let code = errno
            if code == EEXIST { return false }
            throw CryptoError(.keyFileIO, "cannot create device key file \(path): \(String(cString: strerror(code)))")
        }
        linked = true
        unlink(temporary)
        syncDirectory(of: path)
        return true
    }

    /// Best effort: makes the new directory entry durable.
    private static func syncDirectory(of path: String) {
        let directory = path.lastIndex(of: "/").map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd != -1 else { return }
        fsync(fd)
        close(fd)
    }
}
