import Foundation
import MeshCore

// JSON bodies of the `reachability` event (0x0183), `watermark.set` (0x010C) and the
// `watermark` event (0x0186). Reachability (a lease) and the watermark (what the remote app
// processed) are separate values; neither is derived from the other.

/// `reachability` event: `{"peer", "featureID"?, "reachable": bool, "reason": "…"}`.
public struct MeshReachabilityEvent: Codable, Sendable, Equatable {
    /// Why reachability changed.
    public typealias Reason = ReachabilityChangeReason

    /// Full device ID.
    public var peer: String
    /// The feature concerned, or absent for the peer as a whole.
    public var featureID: String?
    /// Whether it is reachable from now on.
    public var reachable: Bool
    /// Why it changed.
    public var reason: Reason

    /// Creates an event.
    public init(peer: String, featureID: String? = nil, reachable: Bool, reason: Reason) {
        self.peer = peer
        self.featureID = featureID
        self.reachable = reachable
        self.reason = reason
    }
}

/// `watermark.set` request and `watermark` event: `{"sessionID", "featureID", "peer", "sequence"}`.
///
/// As a request: this app processed `peer`'s events of the session up to `sequence` (forwarded
/// to `peer`; monotonic, a lower value is ignored). As an event: the app on `peer` processed
/// ours up to `sequence`.
public struct MeshWatermarkBody: Codable, Sendable, Equatable {
    /// The session.
    public var sessionID: UUID
    /// Its feature.
    public var featureID: String
    /// Full or short device ID of the other side.
    public var peer: String
    /// Highest processed sequence.
    public var sequence: UInt64

    /// Creates a body.
    public init(sessionID: UUID, featureID: String, peer: String, sequence: UInt64) {
        self.sessionID = sessionID
        self.featureID = featureID
        self.peer = peer
        self.sequence = sequence
    }
}
