import Foundation

/// A row of the replicated session directory (latest revision wins).
public struct SessionRecord: Sendable, Equatable {
    /// The session.
    public var sessionID: UUID
    /// Its feature.
    public var featureID: String
    /// Who owns it (device or app, as the daemon defines).
    public var owner: String
    /// Its status as the daemon encodes it (e.g. `running`, `closed`).
    public var status: String
    /// When the owner last changed it.
    public var updatedAt: Date
    /// Monotonic revision; a put with a revision not higher than the stored one is ignored,
    /// so a closed session is never revived by a stale announcement.
    public var revision: UInt64
    /// The peer this row was learned from; `nil` for sessions of this device.
    public var sourcePeer: String?
    /// The row changed hands by a session owner hand-over (docs/DEVICE-SET.md): this device
    /// took it over, or accepted a member's claim. Such a row is passed on to every member at
    /// each activation, as a claim, until its owner changes it.
    public var handedOver: Bool

    /// Creates a record.
    public init(sessionID: UUID, featureID: String, owner: String, status: String, updatedAt: Date,
                revision: UInt64, sourcePeer: String?, handedOver: Bool = false) {
        self.sessionID = sessionID
        self.featureID = featureID
        self.owner = owner
        self.status = status
        self.updatedAt = updatedAt
        self.revision = revision
        self.sourcePeer = sourcePeer
        self.handedOver = handedOver
    }
}
