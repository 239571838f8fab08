import Foundation

/// A queued outbox item with its delivery bookkeeping, as returned by ``DeliveryStore/pendingOutbox(peer:after:limit:)``.
public struct OutboxEntry: Sendable, Equatable {
    /// Store-wide id.
    public var id: OutboxID
    /// The peer daemon it is for.
    public var peer: String
    /// Per-peer FIFO position.
    public var sequence: UInt64
    /// The item as enqueued.
    public var item: OutboxItem
    /// How many send attempts were recorded.
    public var attempts: Int
    /// When the last attempt was recorded, if any.
    public var lastAttemptAt: Date?

    /// Creates an entry.
    public init(id: OutboxID, peer: String, sequence: UInt64, item: OutboxItem, attempts: Int, lastAttemptAt: Date?) {
        self.id = id
        self.peer = peer
        self.sequence = sequence
        self.item = item
        self.attempts = attempts
        self.lastAttemptAt = lastAttemptAt
    }
}
