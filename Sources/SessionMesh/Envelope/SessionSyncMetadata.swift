import Foundation

/// The identity every envelope and snapshot carries: which session, which feature, which peer,
/// which event, and where it sits in that peer's sequence.
///
/// The fields are the seed's ten, in the seed's order. The engine fills them in
/// ``SessionSyncEngine/submitLocal(_:at:monotonicTimestamp:)`` and
/// ``SessionSyncEngine/makeSnapshot(at:)``; a transport moves them unchanged.
public struct SessionSyncMetadata: Sendable, Hashable, Codable {
    /// The protocol version of the sender; must equal ``SessionSyncProtocol/currentVersion``.
    public var protocolVersion: Int
    /// One instance of a syncing session. A new session is a new UUID.
    public var sessionID: UUID
    /// What kind of session this is (e.g. `"workout"`); engines filter on it.
    public var featureID: String
    /// ``SessionPeer/id`` of the peer that produced the envelope or snapshot.
    public var sourcePeerID: String
    /// Unique per event; the engine deduplicates on it.
    public var eventID: UUID
    /// Monotonic per (`sourcePeerID`, `sessionID`), starting at 1 for the first event.
    ///
    /// For a snapshot it is the last sequence its source had issued when the snapshot was made
    /// (a snapshot does not consume a sequence number).
    public var sequence: UInt64
    /// When the event happened on the source's wall clock (the tap, not the receive).
    public var causalTimestamp: Date
    /// The source's monotonic clock reading at the event, in seconds, when it has one.
    public var monotonicTimestamp: TimeInterval?
    /// Names the payload's type (e.g. `"MyFeatureEvent"`); engines reject other types.
    public var payloadType: String
    /// The highest sequence of the receiver that the source has processed, when it reports one
    /// (the delivery watermark; never derived from reachability).
    public var acknowledgedSequence: UInt64?

    /// Creates metadata; the parameters are the seed's fields in the seed's order.
    public init(
        protocolVersion: Int = SessionSyncProtocol.currentVersion,
        sessionID: UUID,
        featureID: String,
        sourcePeerID: String,
        eventID: UUID,
        sequence: UInt64,
        causalTimestamp: Date,
        monotonicTimestamp: TimeInterval? = nil,
        payloadType: String,
        acknowledgedSequence: UInt64? = nil
    ) {
        self.protocolVersion = protocolVersion
        self.sessionID = sessionID
        self.featureID = featureID
        self.sourcePeerID = sourcePeerID
        self.eventID = eventID
        self.sequence = sequence
        self.causalTimestamp = causalTimestamp
        self.monotonicTimestamp = monotonicTimestamp
        self.payloadType = payloadType
        self.acknowledgedSequence = acknowledgedSequence
    }
}
