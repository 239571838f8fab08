/// How a `DaemonSessionSyncTransport` reconnects after its connection to meshd ended.
///
/// The n-th wait is `min(initialDelay × 2ⁿ⁻¹, maximumDelay)` seconds, scaled by a random factor
/// in 0.8…1.2 so apps restarted together do not reconnect in lockstep.
public struct DaemonReconnectPolicy: Sendable, Equatable {
    /// The first wait, seconds (default 0.1).
    public var initialDelay: Double
    /// The longest wait between attempts, seconds (default 5).
    public var maximumDelay: Double
    /// Attempts before giving up (nil, the default: until `stop()`). When it gives up, reliable
    /// sends waiting for the attach fail with the last connection error.
    public var maximumAttempts: Int?

    /// Creates a policy; the defaults suit an app whose daemon systemd restarts.
    public init(initialDelay: Double = 0.1, maximumDelay: Double = 5, maximumAttempts: Int? = nil) {
        self.initialDelay = initialDelay
        self.maximumDelay = maximumDelay
        self.maximumAttempts = maximumAttempts
    }
}
