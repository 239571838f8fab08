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
    /// Unauthenticated connections one source address may hold at once.
    public var maximumUnauthenticatedPerSource: Int = 4
    /// Of `maximumUnauthenticatedConnections`, slots only addresses of paired devices may use.
    public var unauthenticatedSlotsReservedForPaired: Int = 16
    /// Seconds an accepted connection has for its preamble and first handshake or pairing
    /// message.
    public var firstMessageTimeout: Double = 1
    /// Bytes a channel connection may hold of writes NIO has not handed to the kernel yet
    /// (each write charged 256 bytes more, see `OutboundBudget`) before the replies the peer
    /// asks for (pings, keepalives, acks, snapshot replies) are dropped. Above the largest
    /// reliable batch (512 KiB), so a peer that reads never loses an ack behind one.
    public var outboundReplyBytes: Int = 1 << 20
    /// Bytes (charged as above) at which this daemon's own writes are refused too and the
    /// channel closes; the peer gets what it missed at its next activation.
    public var outboundBytes: Int = 8 << 20
    /// Keepalive intervals (at least 2 s) a connection may stay over `outboundReplyBytes`
    /// before the channel closes as not reading.
    public var outboundStallKeepalives: Double = 5
    /// Handshake message 1s (two X25519 each) answered per second across all sources, once
    /// their MAC showed a paired device's key.
    public var handshakesPerSecond: Double = 50
    /// Handshake message 1s that may be answered at once before `handshakesPerSecond` applies.
    public var handshakeBurst: Double = 50
    /// Handshake message 1s answered per second for one paired device (its key made the MAC),
    /// next to the global budget: replays of one device's old message 1s cannot spend the
    /// budget of the others.
    public var handshakesPerSecondPerPeer: Double = 5
    /// Message 1s of one paired device that may be answered at once before
    /// `handshakesPerSecondPerPeer` applies.
    public var handshakeBurstPerPeer: Double = 10
    /// Seconds a source address whose channel handshake authenticated keeps counting as a
    /// paired device's (the reserved unauthenticated slots), after its last handshake.
    public var pairedSourceLifetime: Double = 3600
    /// First reconnect delay in seconds; doubles per failure up to `reconnectMaximum`.
    public var reconnectInitial: Double = 0.1
    /// Upper bound of the reconnect delay in seconds (before ±25 % jitter).
    public var reconnectMaximum: Double = 8
    /// Seconds a ping waits for each reply.
    public var pingTimeout: Double = 1
    /// Test-only bug for the simulator (docs/SIMULATION.md, `MESH_SIM_BUG=dial-no-retry`): a
    /// dial round that failed at every address is not tried again after its backoff, so two
    /// devices whose dials both failed (a cut link, a peer down) never reconnect by themselves.
    /// Off everywhere else.
    package var testBugDialNotRetried = false
    /// Test-only bug for the simulator (docs/SIMULATION.md,
    /// `MESH_SIM_BUG=handshake-timestamp-at-answer`): a responder records the initiator's
    /// handshake timestamp as the device's latest when it answers message 1, before the
    /// initiator confirmed, and no longer checks it again at the confirm; so a message 1 that
    /// is never confirmed still raises the bar later genuine ones must pass. Off everywhere else.
    package var testBugTimestampRecordedAtAnswer = false

    /// The defaults above.
    public init() {}
}
