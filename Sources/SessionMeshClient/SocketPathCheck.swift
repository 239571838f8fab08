#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// What is wrong with a socket path before connecting to it, in words for the user.
///
/// A folder on the way that this user may not enter hides the socket just as well as a missing
/// file; saying "no socket file" then sends people looking for a daemon that is running.
enum SocketPathCheck {
    /// Nil when `path` names a socket (connecting may still fail); else the problem.
    static func problem(_ path: String) -> String? {
        var info = stat()
        guard stat(path, &info) == 0 else {
            switch errno {
            case ENOENT: return "no socket file"
            case EACCES:
                let folder = closedFolder(on: path).map { " \($0)" } ?? ""
                return "permission denied: this user may not enter the folder\(folder) that holds the socket"
            case ENOTDIR: return "a part of the path is not a folder"
            case let code: return String(cString: strerror(code))
            }
        }
        guard (info.st_mode & S_IFMT) == S_IFSOCK else {
            return "the path exists but is not a socket (is it the right path?)"
        }
        return nil
    }

    /// The first folder on `path` that this user may not search, if one is found.
    private static func closedFolder(on path: String) -> String? {
        var folder = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/").dropLast() {
            folder += "/" + component
            if access(folder, X_OK) != 0 { return folder }
        }
        return nil
    }
}
