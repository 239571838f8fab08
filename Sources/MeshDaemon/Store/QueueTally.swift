/// A count of items and of their payload bytes.
public struct QueueTally: Sendable, Equatable {
    /// Items.
    public var items: Int
    /// Payload bytes.
    public var bytes: Int

    /// Creates a tally.
    public init(items: Int = 0, bytes: Int = 0) {
        self.items = items
        self.bytes = bytes
    }

    static func + (lhs: QueueTally, rhs: QueueTally) -> QueueTally {
        QueueTally(items: lhs.items + rhs.items, bytes: lhs.bytes + rhs.bytes)
    }

    static func - (lhs: QueueTally, rhs: QueueTally) -> QueueTally {
        QueueTally(items: lhs.items - rhs.items, bytes: lhs.bytes - rhs.bytes)
    }
}
