import Foundation

// JSON bodies of `inbox.ack` (0x0109), `queue` (0x010A) and `queue.cancel` (0x010B).

/// Rules for inbox and outbox item ids on the local API.
///
/// Ids are `u64` on the wire (the envelope event's `inboxID`) but the daemon keeps them as
/// SQLite rowids, so only 0 … 2^63−1 can name an item; 0 names none.
public enum LocalAPIItemID {
    /// The largest id an item can have.
    public static let maximum = UInt64(Int64.max)

    /// Throws `invalid-argument` naming `field` when `id` is above `maximum`.
    public static func validate(_ id: UInt64, field: String, operation: LocalAPIOperation) throws(LocalAPIErrorBody) {
        guard id <= maximum else { throw outOfRange(field, operation: operation) }
    }

    /// The `invalid-argument` error for an id that is not a whole number from 0 to `maximum`
    /// (the daemon also sends it for negative or fractional JSON numbers).
    public static func outOfRange(_ field: String, operation: LocalAPIOperation) -> LocalAPIErrorBody {
        LocalAPIDataError.invalidArgument(operation, "'\(field)' must be whole numbers from 0 to \(maximum), as in the envelope events")
    }
}

/// `inbox.ack` request: the app has processed these inbox items; the daemon deletes them.
public struct MeshInboxAckRequest: Codable, Sendable, Equatable {
    /// Most ids one request may carry.
    public static let maximumIDs = 10_000

    /// Inbox ids from `envelope` events (0 names no item and is ignored).
    public var ids: [UInt64]
    /// Creates a request.
    public init(ids: [UInt64]) { self.ids = ids }

    /// Throws `invalid-argument` for more than `maximumIDs` ids or an id above `LocalAPIItemID.maximum`.
    public func validate() throws(LocalAPIErrorBody) {
        guard ids.count <= Self.maximumIDs else {
            throw LocalAPIDataError.invalidArgument(.inboxAck, "at most \(Self.maximumIDs) ids per request, got \(ids.count)")
        }
        for id in ids { try LocalAPIItemID.validate(id, field: "ids", operation: .inboxAck) }
    }
}

/// `inbox.ack` reply: `{"acknowledged": N}` — how many ids named an item still in the inbox.
public struct MeshInboxAckReply: Codable, Sendable, Equatable {
    /// Items deleted.
    public var acknowledged: Int
    /// Creates a reply.
    public init(acknowledged: Int) { self.acknowledged = acknowledged }
}

/// One outstanding outbound transfer.
public struct MeshQueueItem: Codable, Sendable, Equatable, Hashable {
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
public struct MeshQueueReply: Codable, Sendable, Equatable {
    /// Outstanding transfers.
    public var items: [MeshQueueItem]
    /// Creates a reply.
    public init(items: [MeshQueueItem]) { self.items = items }
}

/// `queue.cancel` request: drop one outstanding transfer. Reply `{}`, or `not-found`.
public struct MeshQueueCancelRequest: Codable, Sendable, Equatable {
    /// Outbox id from `queue`.
    public var id: UInt64
    /// Creates a request.
    public init(id: UInt64) { self.id = id }

    /// Throws `invalid-argument` for an id above `LocalAPIItemID.maximum`.
    public func validate() throws(LocalAPIErrorBody) {
        try LocalAPIItemID.validate(id, field: "id", operation: .queueCancel)
    }
}
