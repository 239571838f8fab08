/// How much the store holds, for `meshctl status` and limits.
public struct StoreCounts: Sendable, Equatable {
    /// Outbox per peer (peers with nothing queued are absent).
    public var outboxByPeer: [String: QueueTally]
    /// Outbox over all peers.
    public var outbox: QueueTally
    /// Inbox (received, not yet acknowledged by an app).
    public var inbox: QueueTally
    /// Event IDs remembered for dedup.
    public var seenEventIDs: Int

    /// Creates counts.
    public init(outboxByPeer: [String: QueueTally], outbox: QueueTally, inbox: QueueTally, seenEventIDs: Int) {
        self.outboxByPeer = outboxByPeer
        self.outbox = outbox
        self.inbox = inbox
        self.seenEventIDs = seenEventIDs
    }
}
