#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The daemon's state folder: created `0700` when missing.
enum StateDirectory {
    /// Creates `path` (and missing parents) with mode `0700`; throws `NodeError` when it cannot.
    static func prepare(_ path: String) throws(NodeError) {
        guard !path.isEmpty else { throw NodeError(code: .stateDirectory, message: "no state folder configured") }
        var current = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            current += "/" + component
            if mkdir(current, 0o700) != 0 && errno != EEXIST {
                throw NodeError(code: .stateDirectory,
                                message: "cannot create the state folder \(current): \(String(cString: strerror(errno)))")
            }
        }
        var info = stat()
        guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR else {
            throw NodeError(code: .stateDirectory, message: "the state folder \(path) is not a folder")
        }
    }

    /// Checks that `path` is a folder of this process's user that no one else may write, and
    /// takes read and search access away from group and others when they have it (as Tor does
    /// with its data folder: a folder made by `mkdir` with mode `0755` is the user's own and
    /// safe to tighten). Returns the mode it had when it was tightened to `0700`, nil when it
    /// was already private. A folder of another user, or one group or others may write, is
    /// refused with the command that fixes it: someone else could have put files in it, so it
    /// is not repaired silently. The mode is read and changed through one descriptor, so the
    /// folder checked is the folder changed.
    static func secure(_ path: String) throws(NodeError) -> UInt16? {
        var info = stat()
        guard lstat(path, &info) == 0 else {
            throw NodeError(code: .stateDirectory, message: "cannot inspect the state folder \(path): \(String(cString: strerror(errno)))")
        }
        guard (info.st_mode & S_IFMT) == S_IFDIR else {
            throw NodeError(code: .stateDirectory, message: "the state folder \(path) is not a folder (a symbolic link is refused); give --state-dir the real folder")
        }
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard fd != -1 else {
            throw NodeError(code: .stateDirectory, message: "cannot open the state folder \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        guard fstat(fd, &info) == 0 else {
            throw NodeError(code: .stateDirectory, message: "cannot inspect the state folder \(path): \(String(cString: strerror(errno)))")
        }
        let user = geteuid()
        guard info.st_uid == user else {
            throw NodeError(code: .stateDirectory, message: "state folder \(path) belongs to uid \(info.st_uid), but meshd runs as uid \(user); run chown -R \(user) \(path), or start meshd as uid \(info.st_uid)")
        }
        let mode = UInt16(info.st_mode & 0o7777)
        guard mode & 0o022 == 0 else {
            throw NodeError(code: .stateDirectory, message: "state folder \(path) is mode \(octal(mode)): group or others may write to it; check what is in it, then run chmod 700 \(path)")
        }
        guard mode != 0o700 else { return nil }
        guard fchmod(fd, 0o700) == 0 else {
            throw NodeError(code: .stateDirectory, message: "state folder \(path) is mode \(octal(mode)) and cannot be made 0700: \(String(cString: strerror(errno))); run chmod 700 \(path)")
        }
        return mode
    }

    /// A mode as four octal digits (`755` → `0755`).
    static func octal(_ mode: UInt16) -> String {
        let digits = String(mode, radix: 8)
        return digits.count >= 4 ? digits : String(repeating: "0", count: 4 - digits.count) + digits
    }

    /// `folder/name`.
    static func path(_ folder: String, _ name: String) -> String {
        folder.hasSuffix("/") ? folder + name : folder + "/" + name
    }
}
