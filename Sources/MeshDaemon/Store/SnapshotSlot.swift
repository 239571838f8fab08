import Foundation

/// A latest-state slot: the newest snapshot of a feature (and session), outbound or from a peer.
///
/// A put with a revision not higher than the stored one is ignored, so a stale snapshot never
/// replaces a newer one, also across restarts.
public struct SnapshotSlot: Sendable, Equatable {
    /// The peer it came from; `nil` for this device's outbound slots.
    public var peer: String?
    /// The feature.
    public var featureID: String
    /// The session, or `nil` for the feature-wide slot.
    public var sessionID: UUID?
    /// Monotonic revision chosen by the publishing app.
    public var revision: UInt64
    /// The encoded snapshot.
    public var bytes: [UInt8]
    /// When it was stored here.
    public var updatedAt: Date

    /// Creates a slot value.
    public init(peer: String?, featureID: String, sessionID: UUID?, revision: UInt64, bytes: [UInt8], updatedAt: Date) {
        self.peer = peer
        self.featureID = featureID
        self.sessionID = sessionID
        self.revision = revision
        self.bytes = bytes
        self.updatedAt = updatedAt
    }
}
