import Foundation
import MeshLocalAPI
import SessionMesh

/// Something the daemon reported on an attachment (`MeshClient.attach(features:sessionID:app:)`).
///
/// Reliable envelopes (`MeshEnvelopeEvent.inboxID != 0`) stay in the daemon's inbox until
/// `MeshClient.ackInbox(_:)` names them; one that is handed out again after the app died or
/// detached without acking has `isRedelivery` set. Reachability (a lease) and watermarks (what
/// the remote app processed) are separate events; neither implies the other.
public enum MeshClientEvent: Sendable, Equatable {
    /// An envelope from a peer: its inbox id (0 = nothing to ack), redelivery flag, sender and mode.
    case envelope(MeshEnvelopeEvent)
    /// A peer's snapshot replaced the inbound slot, or answers `requestSnapshot`.
    case snapshot(MeshSnapshotEvent)
    /// A peer's app asks for a snapshot; answer with `publishSnapshot(_:to:)` to `from`.
    case snapshotRequest(MeshSnapshotRequestEvent)
    /// A peer (or the counterpart app of a feature on it) became reachable or unreachable.
    case reachability(MeshReachabilityEvent)
    /// A peer set a session's timer anchor; its instants are already in this device's clock
    /// (`event.anchor.anchor` is the `SessionTimerAnchor`).
    case anchor(MeshAnchorEvent)
    /// The session directory changed.
    case session(MeshSessionEvent)
    /// The app on `peer` processed this app's events of the session up to `sequence`.
    case watermark(MeshWatermarkBody)
    /// The daemon shed this many events because this client read too slowly. Reliable items
    /// are not lost (they stay in the inbox and come again on the next attach); realtime
    /// envelopes, reachability and other events may be.
    case eventsDropped(UInt64)
    /// An event frame this client could not read (a newer daemon, or a bug); it was skipped.
    case undecodable(operation: String, reason: String)

    /// Wraps a decoded event frame.
    public init(_ event: LocalAPIDataEvent) {
        switch event {
        case .envelope(let e): self = .envelope(e)
        case .snapshot(let e): self = .snapshot(e)
        case .snapshotRequest(let e): self = .snapshotRequest(e)
        case .reachability(let e): self = .reachability(e)
        case .anchor(let e): self = .anchor(e)
        case .session(let e): self = .session(e)
        case .watermark(let e): self = .watermark(e)
        case .eventsDropped(let e): self = .eventsDropped(e.dropped)
        }
    }
}

/// An attachment: what the daemon said about this device and its peers, and the events.
///
/// `events` ends when the connection closes (the daemon stopped or `MeshClient.close()`); the
/// daemon keeps unacknowledged reliable items for the next attach.
public struct MeshAttachment: Sendable {
    /// Identifies the attachment in the daemon's log.
    public var attachmentID: UInt64
    /// This daemon's full device ID.
    public var localDeviceID: String
    /// Paired devices and whether each is reachable at attach time.
    public var peers: [MeshAttachedPeer]
    /// Events of the attached features, in the order the daemon sent them. Holds at most
    /// `MeshClient.eventBufferLimits.capacity` events the app has not taken yet; while it is
    /// full the client stops reading the connection (the daemon then sheds realtime events and
    /// reports them as `.eventsDropped`), so requests on the same connection may wait too.
    public var events: AsyncStream<MeshClientEvent>
}
