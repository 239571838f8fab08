import Foundation

/// One outstanding transfer without its payload, for `meshctl queue`.
public struct OutboxSummary: Sendable, Equatable {
    /// Store-wide id (what `meshctl queue cancel` takes).
    public var id: OutboxID
    /// The peer daemon it is for.
    public var peer: String
    /// Per-peer FIFO position.
    public var sequence: UInt64
    /// The event's ID.
    public var eventID: UUID
    /// The feature.
    public var featureID: String
    /// The session, if any.
    public var sessionID: UUID?
    /// The daemon-defined kind.
    public var kind: UInt8
    /// Payload size in bytes.
    public var size: Int
    /// When it was enqueued.
    public var createdAt: Date
    /// Send attempts so far.
    public var attempts: Int
    /// Time of the last attempt, if any.
    public var lastAttemptAt: Date?

    /// Creates a summary.
    public init(id: OutboxID, peer: String, sequence: UInt64, eventID: UUID, featureID: String,
                sessionID: UUID?, kind: UInt8, size: Int, createdAt: Date, attempts: Int, lastAttemptAt: Date?) {
        self.id = id
        self.peer = peer
        self.sequence = sequence
        self.eventID = eventID
        self.featureID = featureID
        self.sessionID = sessionID
        self.kind = kind
        self.size = size
        self.createdAt = createdAt
        self.attempts = attempts
        self.lastAttemptAt = lastAttemptAt
    }

    /// Time since it was enqueued, measured against `now` (the caller's clock).
    public func age(at now: Date) -> TimeInterval { max(0, now.timeIntervalSince(createdAt)) }
}
