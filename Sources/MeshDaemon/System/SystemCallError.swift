#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A failed POSIX call: which call, on what, and `errno`'s text.
public struct SystemCallError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The C function that failed (`bind`, `chmod`, …).
    public var call: String
    /// The path or object it acted on, if any.
    public var subject: String
    /// `errno` after the call.
    public var errno: Int32

    /// Creates an error.
    public init(call: String, subject: String, errno: Int32) {
        self.call = call
        self.subject = subject
        self.errno = errno
    }

    /// `call(subject): strerror`.
    public var description: String {
        "\(call)(\(subject)): \(String(cString: strerror(errno)))"
    }
}

/// Runs one POSIX call, retrying on `EINTR`, and turns a `-1` result into `SystemCallError`.
///
/// Every direct C call of the daemon's socket and file helpers goes through here.
@discardableResult
func systemCall(_ call: String, _ subject: String = "", _ body: () -> Int32) throws(SystemCallError) -> Int32 {
    while true {
        let result = body()
        if result != -1 { return result }
        let code = errno
        if code == EINTR { continue }
        throw SystemCallError(call: call, subject: subject, errno: code)
    }
}
