#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// A datagram socket bound where systemd's `NOTIFY_SOCKET` would be. A lab hands its path to
/// `meshd` in a lab host (a path socket reaches across network namespaces) and awaits `READY=1`:
/// the daemon's own signal that its local API socket takes connections.
final class NotifySocket: @unchecked Sendable {
    let fd: Int32
    let path: String

    init(path: String) throws {
        self.path = path
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(path.utf8)
        if bytes.first == UInt8(ascii: "@") { bytes[0] = 0 }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + (bytes.first == 0 ? 0 : 1))
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        guard result == 0 else {
            let code = errno
            close(fd)
            throw POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO)
        }
    }

    deinit {
        close(fd)
        if !path.hasPrefix("@") { unlink(path) }
    }

    /// Waits (≤ `timeout` seconds) for the message `expected`, skipping others (`WATCHDOG=1`, …);
    /// false when it did not come in time or `gaveUp` says to stop waiting (checked between
    /// reads, at most every 100 ms: e.g. the process died before it was ready).
    func awaitMessage(_ expected: String, timeout: Double, gaveUp: @escaping @Sendable () -> Bool = { false }) async -> Bool {
        await withCheckedContinuation { continuation in Thread.detachNewThread {
            let deadline = Date().addingTimeInterval(timeout)
            while Date() < deadline {
                if let message = self.receiveNow(timeout: min(0.1, max(0.001, deadline.timeIntervalSinceNow))) {
                    if message == expected { return continuation.resume(returning: true) }
                } else if gaveUp() {
                    return continuation.resume(returning: false)
                }
            }
            continuation.resume(returning: false)
        } }
    }

    /// One `poll(2)`-bounded receive.
    func receiveNow(timeout: Double) -> String? {
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&descriptor, 1, Int32(max(1, timeout * 1000))) == 1 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 512)
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        return n > 0 ? String(decoding: buffer[0..<n], as: UTF8.self) : nil
    }
}
