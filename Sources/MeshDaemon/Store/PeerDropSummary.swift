/// What ``StorePeers/drop(_:)`` deleted when a peer was unpaired.
public struct PeerDropSummary: Sendable, Equatable {
    /// Outbox items that were still queued for the peer.
    public var outboxItems: Int
    /// Inbox items from the peer that no app had acknowledged.
    public var inboxItems: Int
    /// Inbound snapshot slots of the peer.
    public var inboundSlots: Int
    /// Session directory rows learned from the peer.
    public var sessions: Int
    /// Timer anchors the peer sent.
    public var anchors: Int

    /// Creates a summary.
    public init(outboxItems: Int, inboxItems: Int, inboundSlots: Int, sessions: Int, anchors: Int = 0) {
        self.outboxItems = outboxItems
        self.inboxItems = inboxItems
        self.inboundSlots = inboundSlots
        self.sessions = sessions
        self.anchors = anchors
    }
}
