/// Timers and limits of the channel layer, with production defaults.
///
/// Part of `DaemonConfiguration` (`channelTuning`) so tests can shorten timers (a rekey every
/// half second, say) without waiting minutes; `meshd` keeps the defaults.
public struct ChannelTuning: Sendable, Equatable {
    /// Start a new handshake over the channel after this many seconds (WireGuard: 120).
    public var rekeyAfter: Double = 120
    /// Never use keys older than this many seconds (WireGuard: 180); the channel closes.
    public var rejectAfter: Double = 180
    /// Seconds allowed for a channel handshake from connect to key confirmation.
    public var handshakeTimeout: Double = 5
    /// Seconds allowed for one pairing message.
    public var pairingMessageTimeout: Double = 5
    /// Seconds allowed for a whole pairing attempt.
    public var pairingAttemptTimeout: Double = 10
    /// Handshake and pairing attempts per second per source address.
    public var handshakesPerSecondPerSource: Double = 20
    /// Attempts a source may make at once before the rate applies.
    public var handshakeBurstPerSource: Double = 40
    /// Connections that have not authenticated yet, at most, across all sources.
    public var maximumUnauthenticatedConnections: Int = 64
    /// First reconnect delay in seconds; doubles per failure up to `reconnectMaximum`.
    public var reconnectInitial: Double = 0.1
    /// Upper bound of the reconnect delay in seconds (before ±25 % jitter).
    public var reconnectMaximum: Double = 8
    /// Seconds a ping waits for each reply.
    public var pingTimeout: Double = 1

    /// The defaults above.
    public init() {}
}
