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

    /// `folder/name`.
    static func path(_ folder: String, _ name: String) -> String {
        folder.hasSuffix("/") ? folder + name : folder + "/" + name
    }
}
