#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads a config file's text with the checks a person needs a clear answer for: a folder, a
/// FIFO or socket, a file that is not UTF-8, or one far too large for a config file each get an
/// error that says so (instead of a Foundation error code, a hang on a FIFO, or minutes spent
/// parsing a huge file). `/dev/null` reads as an empty file.
///
/// A regular file must also belong to root or to the daemon's user and be writable by no one
/// else (the same rule as the state folder's): whoever can write the config decides who may
/// pair and which users' apps get which features. Readable by others is fine; it holds no secret.
enum ConfigFileReader {
    /// A config file is a few lines; anything over this is a mistake (a wrong path).
    static let maximumBytes = 1 << 20

    /// The file's text, or nil when it does not exist.
    static func read(_ path: String) throws(ConfigurationError) -> String? {
        // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below.
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        if fd == -1 {
            let code = errno
            if code == ENOENT { return nil }
            throw failure(path, "cannot open the config file: \(String(cString: strerror(code)))")
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            throw failure(path, "cannot read the config file: \(String(cString: strerror(errno)))")
        }
        switch info.st_mode & S_IFMT {
        case S_IFREG: try checkOwnership(path, info)
        case S_IFCHR: break
        case S_IFDIR: throw failure(path, "is a folder, not a config file")
        default: throw failure(path, "is not a regular file (a FIFO, socket or device); give the path of a meshd.toml file")
        }
        var bytes = [UInt8](repeating: 0, count: maximumBytes + 1)
        var total = 0
        while total < bytes.count {
            let count = bytes.withUnsafeMutableBytes { buffer in
                posixRead(fd, buffer.baseAddress! + total, buffer.count - total)
            }
            if count == -1 {
                if errno == EINTR { continue }
                throw failure(path, "cannot read the config file: \(String(cString: strerror(errno)))")
            }
            if count == 0 { break }
            total += count
        }
        guard total <= maximumBytes else {
            throw failure(path, "is larger than \(maximumBytes / 1024) KiB; a meshd config file is a few lines (is this the right file?)")
        }
        guard let text = String(validating: bytes[0..<total], as: UTF8.self) else {
            throw ConfigurationError(file: path, line: lineOfFirstInvalidUTF8(bytes[0..<total]),
                                     message: "the config file is not UTF-8 text (is this the right file?)")
        }
        return text.hasPrefix("\u{FEFF}") ? String(text.dropFirst()) : text
    }

    /// Refuses a config file another user owns or that group or others may write.
    private static func checkOwnership(_ path: String, _ info: stat) throws(ConfigurationError) {
        let user = geteuid()
        guard info.st_uid == 0 || info.st_uid == user else {
            throw failure(path, "belongs to uid \(info.st_uid); meshd (uid \(user)) reads only a config file of root or its own user: run chown \(user) \(path) (or chown root)")
        }
        let mode = UInt16(info.st_mode & 0o7777)
        guard mode & 0o022 == 0 else {
            throw failure(path, "is mode \(StateDirectory.octal(mode)): group or others may change it; check it, then run chmod go-w \(path)")
        }
    }

    private static func failure(_ path: String, _ message: String) -> ConfigurationError {
        ConfigurationError(file: path, message: message)
    }

    /// 1-based line of the first byte sequence that is not valid UTF-8.
    private static func lineOfFirstInvalidUTF8(_ bytes: ArraySlice<UInt8>) -> Int {
        var iterator = bytes.makeIterator()
        var parser = Unicode.UTF8.ForwardParser()
        var line = 1
        while true {
            switch parser.parseScalar(from: &iterator) {
            case .valid(let scalar): if scalar.count == 1, scalar.first == 0x0A { line += 1 }
            case .error, .emptyInput: return line
            }
        }
    }
}

/// `read(2)`, named apart from ``ConfigFileReader/read(_:)``.
private func posixRead(_ fd: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int {
    #if canImport(Glibc)
    Glibc.read(fd, buffer, count)
    #else
    Darwin.read(fd, buffer, count)
    #endif
}
