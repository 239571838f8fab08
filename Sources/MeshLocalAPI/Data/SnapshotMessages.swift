import Foundation

// JSON requests of `snapshot.request` (0x0103) and `snapshot.latest` (0x0104).

/// `snapshot.request` request: ask a peer's app (or, when none is attached, its daemon's outbound
/// slot) for a snapshot. The reply is `{}`; the snapshot arrives later as a `snapshot` event.
public struct SnapshotAskRequest: Codable, Sendable, Equatable {
    /// The session whose state is wanted.
    public var sessionID: UUID
    /// The feature whose state is wanted.
    public var featureID: String
    /// Device ID of the peer to ask; every paired device when absent.
    public var peer: String?

    /// Creates a request.
    public init(sessionID: UUID, featureID: String, peer: String? = nil) {
        self.sessionID = sessionID
        self.featureID = featureID
        self.peer = peer
    }
}

/// `snapshot.latest` request: read the inbound latest-state slot. The reply is a binary
/// `SnapshotLatestReply`, or the error `not-found` when the slot is empty.
public struct SnapshotLatestRequest: Codable, Sendable, Equatable {
    /// The feature.
    public var featureID: String
    /// Device ID of the peer; the newest slot of any peer when absent.
    public var peer: String?
    /// Narrow to one session, when given.
    public var sessionID: UUID?

    /// Creates a request.
    public init(featureID: String, peer: String? = nil, sessionID: UUID? = nil) {
        self.featureID = featureID
        self.peer = peer
        self.sessionID = sessionID
    }
}
