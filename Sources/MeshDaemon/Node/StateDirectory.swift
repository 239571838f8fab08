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

    /// Checks that `path` belongs to this process's user and that group and others have no
    /// access; the error says what to run to fix it. The folder holds the identity key, so a
    /// folder others can enter or another user controls is refused, not repaired silently.
    static func checkOwnership(_ path: String) throws(NodeError) {
        var info = stat()
        guard lstat(path, &info) == 0 else {
            throw NodeError(code: .stateDirectory, message: "cannot inspect the state folder \(path): \(String(cString: strerror(errno)))")
        }
        guard (info.st_mode & S_IFMT) == S_IFDIR else {
            throw NodeError(code: .stateDirectory, message: "the state folder \(path) is not a folder (a symbolic link is refused); give --state-dir the real folder")
        }
        let user = geteuid()
        guard info.st_uid == user else {
            throw NodeError(code: .stateDirectory, message: "state folder \(path) belongs to uid \(info.st_uid), but meshd runs as uid \(user); run chown -R \(user) \(path), or start meshd as uid \(info.st_uid)")
        }
        let mode = info.st_mode & 0o7777
        guard mode & 0o077 == 0 else {
            throw NodeError(code: .stateDirectory, message: "state folder \(path) is mode \(String(mode, radix: 8).leftPadded(to: 4)); run chmod 700 \(path)")
        }
    }

    /// `folder/name`.
    static func path(_ folder: String, _ name: String) -> String {
        folder.hasSuffix("/") ? folder + name : folder + "/" + name
    }
}

extension String {
    /// The text with leading zeros up to `width` characters (`755` → `0755`).
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
