/// Tuning of the delivery router; the defaults suit a daemon.
public struct DeliveryRouterOptions: Sendable, Equatable {
    /// Pre-activation buffer: envelopes held per peer before its first activation (oldest dropped).
    public var pendingCapacity = 200
    /// Smallest realtime ack deadline, seconds (the deadline is max(4 × RTT, this)).
    public var minimumAckDeadline = 0.020
    /// Longest realtime ack deadline, seconds.
    public var maximumAckDeadline = 0.5
    /// Reliable items sent but not yet acknowledged, per peer, before the sender waits.
    public var reliableWindow = 4096
    /// Largest reliable batch message, bytes of payload.
    public var maximumBatchBytes = 512 * 1024
    /// First retry delay of unacknowledged reliable items, seconds (doubles, jittered ±25 %).
    public var retryInitial = 1.0
    /// Longest retry delay, seconds.
    public var retryMaximum = 30.0
    /// How long a peer's feature presence lasts without renewal, seconds.
    public var presenceLease = 6.0
    /// How much longer than `presenceLease` the owner of an open session may stay away before
    /// a member takes the session over, seconds (config key `session_handover_grace`; default
    /// 30). docs/DEVICE-SET.md, "Session owner hand-over".
    public var sessionHandOverGrace = 30.0
    /// How long `session.close` waits for reachable peers to ack the closing envelope, seconds.
    public var closeWait = 2.0
    /// Realtime event IDs remembered in memory for dedup against a queued copy: at least the
    /// last this many handed out, at most twice as many (`RecentEventIDs`).
    public var realtimeDedupMemory = 65_536
    /// Live realtime envelopes held per attachment while its inbox replay runs (they follow the
    /// replayed items); more are shed and reported to the app in `events.dropped`, so a replay
    /// under a sustained realtime stream cannot grow the daemon's memory without bound.
    public var maximumDeferredLive = 8192
    /// Inbox items arriving for an attachment while its inbox replay runs that are held in
    /// memory (handed after the replayed ones); beyond this they stay only in the store and the
    /// replay takes another pass over the inbox for them, so a replay under a sustained stream
    /// of reliable items or realtime fallbacks cannot grow the daemon's memory without bound.
    public var maximumDeferredInbox = 8192
    /// Longest wait, seconds, before an attachment whose inbox hand-out could not be recorded
    /// (a full disk) is offered its inbox again (from 250 ms, doubling).
    public var handOutRetryMaximum = 5.0

    /// Bytes of received items waiting for their inbox transaction. At this level the router
    /// takes no further message from its peers until a transaction made room (their TCP
    /// connections then push back), and realtime items that would wait for the inbox are not
    /// taken (unacked: their sender falls back to its outbox).
    public var inboxBacklogBytes = 8 << 20
    /// Sessions per peer whose watermark the router keeps in memory; a watermark for one more
    /// is refused (`delivery.watermarks.refused`).
    public var maximumWatermarkSessionsPerPeer = 4096
    /// Seconds after which an inbox item that no app took expires, when no app of its feature
    /// is attached (config key `inbox_expire_unattached_after`; default 7 days; 0: never).
    public var inboxUnattachedExpiry: Double = 7 * 86_400

    /// Store work runs inline on the router's thread: no store worker queue and no commit
    /// thread (the group committer flushes on the loop). For a daemon core driven by hand on one
    /// thread (the deterministic simulator); a daemon keeps the default (false), so no fsync
    /// blocks its loop.
    package var storeInline = false
    /// Seeds the router's random choices (retry jitter); nil: the system generator. For the
    /// deterministic simulator.
    package var randomSeed: UInt64?
    /// TEST ONLY — re-introduces a historical bug for the simulator to catch: an inbox item
    /// reaches the app before its hand-out is recorded durably (the record is written later).
    /// Never set outside tests.
    package var testBugHandOutBeforeDurable = false
    /// TEST ONLY — re-introduces a historical bug for the simulator to catch: a reliable
    /// outbox item is deleted when it is sent, before the peer's ack. Never set outside tests.
    package var testBugDeleteOutboxAtSend = false

    /// The defaults.
    public init() {}
}
