#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// Reads from a pipe without Foundation's `availableData`/`readDataToEndOfFile`, which trap on
/// `EINTR` (a signal arriving while a test waits, e.g. SIGCHLD from another test's child).
enum PipeReader {
    /// Waits up to `timeout` seconds for bytes on `handle`; returns them, `Data()` at end of file,
    /// or nil when nothing arrived in time. Retries on `EINTR`.
    static func read(_ handle: FileHandle, timeout: Double) -> Data? {
        let fd = handle.fileDescriptor
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let remaining = deadline.timeIntervalSinceNow
            if remaining <= 0 { return nil }
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, Int32(min(remaining * 1000 + 1, 1000)))
            if ready < 0 && errno == EINTR { continue }
            if ready < 0 { return Data() }
            if ready == 0 { continue }
            var buffer = [UInt8](repeating: 0, count: 65_536)
            let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count > 0 { return Data(buffer[0..<count]) }
            if count < 0 && errno == EINTR { continue }
            return Data()
        }
    }

    /// Reads until end of file or `timeout` seconds, whichever comes first.
    static func readToEnd(_ handle: FileHandle, timeout: Double) -> Data {
        var data = Data()
        let deadline = Date().addingTimeInterval(timeout)
        while let chunk = read(handle, timeout: max(0.001, deadline.timeIntervalSinceNow)), !chunk.isEmpty {
            data.append(chunk)
        }
        return data
    }
}
