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
