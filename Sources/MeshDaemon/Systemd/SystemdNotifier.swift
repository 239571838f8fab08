#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Sends `sd_notify` messages (`READY=1`, `STOPPING=1`, `WATCHDOG=1`) to systemd through the
/// datagram socket named by `NOTIFY_SOCKET`.
///
/// Without `NOTIFY_SOCKET` (not started by systemd) every call is a no-op. A leading `@` in the
/// path names a socket in the abstract namespace. The environment is passed in, so tests can
/// point it at a socket they bound.
public struct SystemdNotifier: Sendable {
    /// The notify socket path, if systemd gave one.
    public let socketPath: String?
    /// How often to send `WATCHDOG=1` (half of `WATCHDOG_USEC`), if the watchdog is on for this
    /// process (`WATCHDOG_PID` absent or equal to our pid).
    public let watchdogInterval: Duration?

    /// Reads `NOTIFY_SOCKET`, `WATCHDOG_USEC` and `WATCHDOG_PID` from `environment`.
    public init(environment: [String: String], processID: Int32 = getpid()) {
        let path = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
        socketPath = path
        if let text = environment["WATCHDOG_USEC"], let usec = UInt64(text), usec > 0,
           environment["WATCHDOG_PID"].map({ Int32($0) == processID }) ?? true {
            watchdogInterval = .microseconds(Int64(clamping: usec / 2))
        } else {
            watchdogInterval = nil
        }
    }

    /// Whether systemd asked for notifications.
    public var isEnabled: Bool { socketPath != nil }

    /// Sends one notification (`READY=1`, `STOPPING=1`, `STATUS=…`, …). No-op when disabled.
    public func notify(_ state: String) throws(SystemCallError) {
        guard let socketPath else { return }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var pathBytes = Array(socketPath.utf8)
        if pathBytes.first == UInt8(ascii: "@") { pathBytes[0] = 0 }
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard pathBytes.count < capacity else {
            throw SystemCallError(call: "sd_notify", subject: socketPath, errno: ENAMETOOLONG)
        }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: pathBytes) }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + pathBytes.count + (pathBytes.first == 0 ? 0 : 1))

        let fd = try systemCall("socket", socketPath) {
            socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        }
        defer { close(fd) }
        let message = Array(state.utf8)
        try systemCall("sendto", socketPath) {
            message.withUnsafeBytes { bytes in
                withUnsafePointer(to: &address) { pointer in
                    pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        Int32(truncatingIfNeeded: sendto(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL), $0, length))
                    }
                }
            }
        }
    }
}
