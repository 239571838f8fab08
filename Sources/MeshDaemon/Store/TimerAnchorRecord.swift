import Foundation

/// The latest timer anchor of a (feature, session) from one sender, stored as encoded bytes
/// (latest revision wins within that sender's row).
public struct TimerAnchorRecord: Sendable, Equatable {
    /// The feature.
    public var featureID: String
    /// The session.
    public var sessionID: UUID
    /// The peer that sent it; `nil` for this device's anchors (the only ones resent to peers).
    public var sourcePeer: String?
    /// Monotonic revision; lower or equal revisions are ignored.
    public var revision: UInt64
    /// The encoded anchor.
    public var bytes: [UInt8]
    /// When it was stored here.
    public var updatedAt: Date

    /// Creates a record.
    public init(featureID: String, sessionID: UUID, sourcePeer: String? = nil, revision: UInt64, bytes: [UInt8],
                updatedAt: Date) {
        self.featureID = featureID
        self.sessionID = sessionID
        self.sourcePeer = sourcePeer
        self.revision = revision
        self.bytes = bytes
        self.updatedAt = updatedAt
    }
}
