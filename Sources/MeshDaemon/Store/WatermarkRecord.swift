import Foundation

/// A delivery watermark kept in the store: the highest sequence of a session's events that an
/// app has processed, per peer and direction (docs/DELIVERY.md, "Presence and watermarks"). Monotonic: a lower value never
/// replaces a higher one.
public struct WatermarkRecord: Sendable, Equatable {
    /// Which side processed the events.
    public enum Direction: Int64, Sendable, Equatable {
        /// An app on this device processed `peer`'s events (`watermark.set` here; forwarded).
        case sent = 0
        /// `peer`'s app processed this device's events (reported by the peer).
        case received = 1
    }

    /// The peer's full device ID (the store's peer key).
    public var peer: String
    /// The session.
    public var sessionID: UUID
    /// Sent or received.
    public var direction: Direction
    /// The session's feature.
    public var featureID: String
    /// Highest processed sequence.
    public var sequence: UInt64
    /// When it was stored here.
    public var updatedAt: Date

    /// Creates a record.
    public init(peer: String, sessionID: UUID, direction: Direction, featureID: String, sequence: UInt64, updatedAt: Date) {
        self.peer = peer
        self.sessionID = sessionID
        self.direction = direction
        self.featureID = featureID
        self.sequence = sequence
        self.updatedAt = updatedAt
    }
}
