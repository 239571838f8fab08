import Foundation

// JSON bodies of `inbox.ack` (0x0109), `queue` (0x010A) and `queue.cancel` (0x010B).

/// `inbox.ack` request: the app has processed these inbox items; the daemon deletes them.
public struct InboxAckRequest: Codable, Sendable, Equatable {
    /// Inbox ids from `envelope` events (non-zero).
    public var ids: [UInt64]
    /// Creates a request.
    public init(ids: [UInt64]) { self.ids = ids }
}

/// `inbox.ack` reply: `{"acknowledged": N}` — how many ids named an item still in the inbox.
public struct InboxAckReply: Codable, Sendable, Equatable {
    /// Items deleted.
    public var acknowledged: Int
    /// Creates a reply.
    public init(acknowledged: Int) { self.acknowledged = acknowledged }
}

/// One outstanding outbound transfer.
public struct QueueItem: Codable, Sendable, Equatable, Hashable {
    /// Outbox id (for `queue.cancel`).
    public var id: UInt64
    /// Full device ID of the peer it waits for.
    public var peer: String
    /// Its feature.
    public var featureID: String
    /// The envelope's event id.
    public var eventID: UUID
    /// Seconds since it was queued.
    public var ageSeconds: Double
    /// Delivery attempts so far.
    public var attempts: Int
    /// Encoded size in bytes.
    public var size: Int

    /// Creates an entry.
    public init(id: UInt64, peer: String, featureID: String, eventID: UUID, ageSeconds: Double, attempts: Int, size: Int) {
        self.id = id
        self.peer = peer
        self.featureID = featureID
        self.eventID = eventID
        self.ageSeconds = ageSeconds
        self.attempts = attempts
        self.size = size
    }
}

/// `queue` reply: every outstanding transfer, per peer in FIFO order.
public struct QueueReply: Codable, Sendable, Equatable {
    /// Outstanding transfers.
    public var items: [QueueItem]
    /// Creates a reply.
    public init(items: [QueueItem]) { self.items = items }
}

/// `queue.cancel` request: drop one outstanding transfer. Reply `{}`, or `not-found`.
public struct QueueCancelRequest: Codable, Sendable, Equatable {
    /// Outbox id from `queue`.
    public var id: UInt64
    /// Creates a request.
    public init(id: UInt64) { self.id = id }
}
