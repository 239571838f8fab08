import Foundation

/// "I'm out of sync, send me a snapshot": sent when an engine reports
/// ``SessionSyncReceiveResult/snapshotRequired(expectedSequence:receivedSequence:)``.
///
/// The answer is a ``AnySessionSyncSnapshot`` of the same session (and feature, when given)
/// sent back to `requestingPeerID`.
public struct SessionSnapshotRequest: Sendable, Hashable, Codable {
    /// The requester's protocol version; must equal ``SessionSyncProtocol/currentVersion``.
    public var protocolVersion: Int
    /// The session whose state is wanted.
    public var sessionID: UUID
    /// The feature whose state is wanted; `nil` asks for every feature of the session.
    public var featureID: String?
    /// ``SessionPeer/id`` of the peer that wants the snapshot (where to send it).
    public var requestingPeerID: String
    /// ``SessionPeer/id`` of the peer asked, or `nil` for whichever peer receives it.
    public var targetPeerID: String?
    /// The sequence the requester expected next, when the request follows a gap.
    public var expectedSequence: UInt64?
    /// The sequence the requester actually received, when the request follows a gap.
    public var receivedSequence: UInt64?

    /// Creates a request.
    public init(
        protocolVersion: Int = SessionSyncProtocol.currentVersion,
        sessionID: UUID,
        featureID: String? = nil,
        requestingPeerID: String,
        targetPeerID: String? = nil,
        expectedSequence: UInt64? = nil,
        receivedSequence: UInt64? = nil
    ) {
        self.protocolVersion = protocolVersion
        self.sessionID = sessionID
        self.featureID = featureID
        self.requestingPeerID = requestingPeerID
        self.targetPeerID = targetPeerID
        self.expectedSequence = expectedSequence
        self.receivedSequence = receivedSequence
    }
}
