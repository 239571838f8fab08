#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Logging
import MeshDaemon
import ServiceLifecycle
import Testing

@Suite("sd_notify")
struct SystemdNotifierTests {
    /// A datagram socket bound where systemd's would be; `path` may start with `@` (abstract).
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
            guard result == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
            var timeout = timeval(tv_sec: 5, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        }

        deinit {
            close(fd)
            if !path.hasPrefix("@") { unlink(path) }
        }

        func receive() async throws -> String? {
            try await blocking { self.receiveNow() }
        }

        func receiveNow() -> String? {
            var buffer = [UInt8](repeating: 0, count: 512)
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            return n > 0 ? String(decoding: buffer[0..<n], as: UTF8.self) : nil
        }
    }

    @Test func readyReachesAPathSocket() async throws {
        let listener = try NotifySocket(path: "/tmp/smt-notify-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": listener.path])
        #expect(notifier.isEnabled)
        try notifier.notify("READY=1")
        #expect(try await listener.receive() == "READY=1")
    }

    @Test func readyReachesAnAbstractSocket() async throws {
        let listener = try NotifySocket(path: "@smt-notify-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try SystemdNotifier(environment: ["NOTIFY_SOCKET": listener.path]).notify("READY=1")
        #expect(try await listener.receive() == "READY=1")
    }

    @Test func withoutNotifySocketNothingIsSent() throws {
        let notifier = SystemdNotifier(environment: [:])
        #expect(!notifier.isEnabled)
        try notifier.notify("READY=1")
    }

    @Test func theWatchdogIntervalIsHalfOfWatchdogUsecForThisProcessOnly() {
        let mine = SystemdNotifier(environment: ["NOTIFY_SOCKET": "/x", "WATCHDOG_USEC": "30000000"], processID: 42)
        #expect(mine.watchdogInterval == .seconds(15))
        let other = SystemdNotifier(environment: ["NOTIFY_SOCKET": "/x", "WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "7"], processID: 42)
        #expect(other.watchdogInterval == nil)
    }

    @Test func theServiceSendsWatchdogPingsAndStoppingOnShutdown() async throws {
        let listener = try NotifySocket(path: "/tmp/smt-notify-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": listener.path, "WATCHDOG_USEC": "100000"])
        let group = ServiceGroup(configuration: ServiceGroupConfiguration(
            services: [.init(service: SystemdNotifyService(notifier: notifier, logger: Logger(label: "test")))],
            logger: Logger(label: "test")))
        let running = Task { try await group.run() }
        #expect(try await listener.receive() == "WATCHDOG=1")
        #expect(try await listener.receive() == "WATCHDOG=1")
        await group.triggerGracefulShutdown()
        var messages: [String] = []
        while messages.last != "STOPPING=1", messages.count < 20, let next = try await listener.receive() { messages.append(next) }
        #expect(messages.last == "STOPPING=1")
        try await running.value
    }
}
