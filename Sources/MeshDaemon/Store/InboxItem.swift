import Foundation

/// A reliable item received from a peer daemon, to keep until a local app acknowledges it.
///
/// Opaque encoded bytes plus the columns the store indexes; the store never looks inside ``payload``.
public struct InboxItem: Sendable, Equatable {
    /// The event's ID: the dedup key across the realtime and queued paths and across restarts.
    public var eventID: UUID
    /// The feature whose app receives it.
    public var featureID: String
    /// The session, if any.
    public var sessionID: UUID?
    /// The daemon-defined kind.
    public var kind: UInt8
    /// The sender's per-peer outbox sequence (0 when the item did not come from an outbox).
    public var senderSequence: UInt64
    /// The encoded item.
    public var payload: [UInt8]

    /// Creates an item.
    public init(eventID: UUID, featureID: String, sessionID: UUID? = nil, kind: UInt8,
                senderSequence: UInt64 = 0, payload: [UInt8]) {
        self.eventID = eventID
        self.featureID = featureID
        self.sessionID = sessionID
        self.kind = kind
        self.senderSequence = senderSequence
        self.payload = payload
    }
}
