import Foundation

/// The latest timer anchor of a session, stored as encoded bytes (latest revision wins).
public struct TimerAnchorRecord: Sendable, Equatable {
    /// The session.
    public var sessionID: UUID
    /// Monotonic revision; lower or equal revisions are ignored.
    public var revision: UInt64
    /// The encoded anchor.
    public var bytes: [UInt8]
    /// When it was stored here.
    public var updatedAt: Date

    /// Creates a record.
    public init(sessionID: UUID, revision: UInt64, bytes: [UInt8], updatedAt: Date) {
        self.sessionID = sessionID
        self.revision = revision
        self.bytes = bytes
        self.updatedAt = updatedAt
    }
}
