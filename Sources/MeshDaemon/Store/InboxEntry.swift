import Foundation

/// A stored inbox item with its delivery count, as returned by ``StoreInbox/pending(featureID:after:limit:)``.
public struct InboxEntry: Sendable, Equatable {
    /// Store-wide id, in arrival order.
    public var id: InboxID
    /// The peer daemon it came from.
    public var peer: String
    /// The item as received.
    public var item: InboxItem
    /// When this daemon stored it.
    public var receivedAt: Date
    /// How many times ``StoreInbox/markDelivered(ids:)`` was called for it.
    public var deliveryCount: Int
    /// The row's event or session ID was damaged in the file: `item` holds
    /// ``StoreColumns/damagedID`` in its place (the payload still carries the envelope whole).
    public var hasDamagedID: Bool

    /// Creates an entry.
    public init(id: InboxID, peer: String, item: InboxItem, receivedAt: Date, deliveryCount: Int, hasDamagedID: Bool = false) {
        self.id = id
        self.hasDamagedID = hasDamagedID
        self.peer = peer
        self.item = item
        self.receivedAt = receivedAt
        self.deliveryCount = deliveryCount
    }

    /// `true` when it was handed to an app before and not acknowledged: deliver it marked as a redelivery.
    public var isRedelivery: Bool { deliveryCount > 0 }
}
