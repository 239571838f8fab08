/// Where an enqueued item sits: returned by ``StoreOutbox/enqueue(peer:item:)`` once it is durable.
public struct OutboxReceipt: Sendable, Equatable {
    /// Store-wide id (for `meshctl queue cancel`).
    public var id: OutboxID
    /// Per-peer sequence: 1, 2, 3… in enqueue order, never reused for that peer, even after acks.
    public var sequence: UInt64
    /// `true` when the event ID was already queued for this peer; nothing new was written.
    public var wasAlreadyQueued: Bool

    /// Creates a receipt.
    public init(id: OutboxID, sequence: UInt64, wasAlreadyQueued: Bool) {
        self.id = id
        self.sequence = sequence
        self.wasAlreadyQueued = wasAlreadyQueued
    }
}
