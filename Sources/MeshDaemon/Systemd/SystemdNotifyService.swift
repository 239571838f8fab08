import Logging
import ServiceLifecycle

/// Keeps systemd informed for the life of the `ServiceGroup`: `WATCHDOG=1` every
/// `watchdogInterval` (when the unit has `WatchdogSec=`), and `STOPPING=1` as soon as graceful
/// shutdown begins.
///
/// Put it last in the group, so it is the first to hear about shutdown. `READY=1` is not sent
/// here: the daemon sends it when its socket listens (`LocalAPIService`'s `onListening`).
public struct SystemdNotifyService: Service {
    private let notifier: SystemdNotifier
    private let logger: Logger
    private let clock: any Clock<Duration>

    /// Creates the service; the watchdog interval is waited on `clock` (real time by default).
    public init(notifier: SystemdNotifier, logger: Logger, clock: any Clock<Duration> = ContinuousClock()) {
        self.notifier = notifier
        self.logger = logger
        self.clock = clock
    }

    /// Sends watchdog pings until graceful shutdown, then `STOPPING=1`.
    public func run() async throws {
        guard notifier.isEnabled else {
            try? await gracefulShutdown()
            return
        }
        let notifier = self.notifier
        let logger = self.logger
        let clock = self.clock
        await withGracefulShutdownHandler {
            guard let interval = notifier.watchdogInterval else {
                try? await gracefulShutdown()
                return
            }
            try? await cancelWhenGracefulShutdown {
                while true {
                    Self.send("WATCHDOG=1", notifier: notifier, logger: logger)
                    try await clock.sleep(for: interval)
                }
            }
        } onGracefulShutdown: {
            Self.send("STOPPING=1", notifier: notifier, logger: logger)
        }
    }

    private static func send(_ state: String, notifier: SystemdNotifier, logger: Logger) {
        do {
            try notifier.notify(state)
        } catch {
            logger.error("sd_notify failed", metadata: ["systemd.state": "\(state)", "error": "\(error)"])
        }
    }
}

extension SystemdNotifyService: CustomStringConvertible {
    /// `SystemdNotifyService`, for ServiceLifecycle's logs.
    public var description: String { "SystemdNotifyService" }
}
