import Foundation

/// A queued outbox item with its delivery bookkeeping, as returned by ``StoreOutbox/pending(peer:after:limit:)``.
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
    /// Its event or session ID was damaged in the file and this read repaired it (see
    /// ``StoreOutbox/pending(peer:after:limit:)``).
    public var repairedID: Bool

    /// Creates an entry.
    public init(id: OutboxID, peer: String, sequence: UInt64, item: OutboxItem, attempts: Int, lastAttemptAt: Date?,
                repairedID: Bool = false) {
        self.id = id
        self.repairedID = repairedID
        self.peer = peer
        self.sequence = sequence
        self.item = item
        self.attempts = attempts
        self.lastAttemptAt = lastAttemptAt
    }
}
