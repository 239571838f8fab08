import Foundation

/// A reliable item to queue for one peer daemon: opaque encoded bytes plus the columns the
/// store indexes. The store never looks inside ``payload``.
public struct OutboxItem: Sendable, Equatable {
    /// Unique per event; the receiver dedups on it. Enqueueing the same ID again for the same
    /// peer while it is still queued returns the existing entry instead of a second copy.
    public var eventID: UUID
    /// The feature the item belongs to.
    public var featureID: String
    /// The session, if any.
    public var sessionID: UUID?
    /// What the payload is (envelope, snapshot, request, anchor, session…), as the daemon defines it.
    public var kind: UInt8
    /// The encoded item, sent as is.
    public var payload: [UInt8]
    /// When the app submitted it (shown as age by `meshctl queue`).
    public var createdAt: Date
    /// The local uid whose app queued it (its share of the outbox, `uid_max_outbox_*`); nil
    /// for the daemon's own items and a client whose uid is unknown, counted toward no uid.
    public var ownerUID: UInt32?

    /// Creates an item.
    public init(eventID: UUID, featureID: String, sessionID: UUID? = nil, kind: UInt8,
                payload: [UInt8], createdAt: Date, ownerUID: UInt32? = nil) {
        self.ownerUID = ownerUID
        self.eventID = eventID
        self.featureID = featureID
        self.sessionID = sessionID
        self.kind = kind
        self.payload = payload
        self.createdAt = createdAt
    }
}
