import Logging
import MeshCore

/// The local API's warnings a local client can cause over and over (refused connections,
/// connections closed for a full queue or a deadline): each kind at most once per interval,
/// with the number held back since the last one, through the same `RateLimitedWarning` the
/// peer warnings use. `summarise` (from the server's tick) writes one line per kind for what
/// was held back, so the end of a flood is reported too.
///
/// Shared by every connection of a server; connections may run on different loops, hence the
/// lock. `now` is the monotonic time in nanoseconds (injected, so tests step it).
final class LocalAPIWarnings: Sendable {
    /// What is warned about.
    enum Kind: CaseIterable, Sendable {
        /// A connection refused because its uid had its maximum open.
        case refusedPerUID
        /// A connection refused because the server had its maximum open.
        case refused
        /// A connection closed because its request queue passed its limit.
        case queueLimit
        /// A connection closed by a deadline (no first request, or a frame left half-sent).
        case timedOut

        /// The warning's constant message.
        var message: Logger.Message {
            switch self {
            case .refusedPerUID: "local API connection refused: too many open for this uid"
            case .refused: "local API connection refused: too many open"
            case .queueLimit: "local API client exceeded the request queue limit; closing"
            case .timedOut: "local API connection timed out; closing"
            }
        }

        /// The message of the line that summarises what was held back.
        var summary: Logger.Message {
            switch self {
            case .refusedPerUID: "more local API connections refused for their uid (warnings held back)"
            case .refused: "more local API connections refused (warnings held back)"
            case .queueLimit: "more local API clients closed for their request queue (warnings held back)"
            case .timedOut: "more local API connections timed out (warnings held back)"
            }
        }
    }

    private let limiters: Locked<[Kind: RateLimitedWarning]>
    private let logger: Logger
    private let now: @Sendable () -> UInt64

    /// Warnings to `logger`, each kind at most once per `intervalSeconds`.
    init(logger: Logger, intervalSeconds: Double = 10, now: @escaping @Sendable () -> UInt64) {
        var limiters: [Kind: RateLimitedWarning] = [:]
        for kind in Kind.allCases { limiters[kind] = RateLimitedWarning(intervalSeconds: intervalSeconds) }
        self.limiters = Locked(limiters)
        self.logger = logger
        self.now = now
    }

    /// One occurrence of `kind`: written (with `suppressed`, the count held back before it) or
    /// counted for the next line. `metadata` is evaluated only when the line is written.
    func warn(_ kind: Kind, metadata: @autoclosure () -> Logger.Metadata = [:]) {
        let time = now()
        guard let suppressed = limiters.withLock({ $0[kind]?.admit(now: time) }) else { return }
        var fields = metadata()
        fields["suppressed"] = "\(suppressed)"
        logger.warning(kind.message, metadata: fields)
    }

    /// One line per kind whose interval passed with occurrences held back.
    func summarise() {
        let time = now()
        let held = limiters.withLock { limiters in
            Kind.allCases.compactMap { kind in limiters[kind]?.summary(now: time).map { (kind, $0) } }
        }
        for (kind, count) in held {
            logger.warning(kind.summary, metadata: ["suppressed": "\(count)"])
        }
    }
}
