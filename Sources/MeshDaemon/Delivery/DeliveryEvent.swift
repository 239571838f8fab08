import Foundation
import MeshCore
import SessionMesh

/// Something the router hands to an attached app (the local API turns it into an `event` frame).
public enum DeliveryEvent: Sendable, Equatable {
    /// An envelope from `from`. `inboxID` is 0 for realtime items (nothing to ack); otherwise
    /// the item stays in the inbox until `inbox.ack`. `mode` is the local API mode byte.
    case envelope(from: String, inboxID: Int64, redelivery: Bool, mode: UInt8, encoded: [UInt8])
    /// A snapshot from `from` (encoded with `SessionWireCodec`).
    case snapshot(from: String, encoded: [UInt8])
    /// A peer's app asks for a snapshot (encoded `SessionSnapshotRequest`).
    case snapshotRequest(from: String, encoded: [UInt8])
    /// Reachability of a peer (featureID nil) or of a feature on it changed.
    case reachability(peer: String, featureID: String?, reachable: Bool, reason: ReachabilityChangeReason)
    /// A timer anchor, already rewritten into this device's clock.
    case anchor(from: String, sessionID: UUID, featureID: String, revision: UInt64, anchor: SessionTimerAnchor)
    /// A session directory row changed.
    case session(SessionRecord, change: SessionChange)
    /// The app on `peer` processed our events of the session up to `sequence`.
    case watermark(peer: String, sessionID: UUID, featureID: String, sequence: UInt64)
}

/// Where the router sends an attachment's events. Implementations must not block: the local
/// API's sink hands frames to the connection's event loop, which sheds them (counted) when the
/// client reads too slowly.
public protocol DeliveryEventSink: AnyObject, Sendable {
    /// Delivers one event, in call order.
    func emit(_ event: DeliveryEvent)

    /// Tells the app that `count` events meant for it were shed before reaching the sink (the
    /// router bounds what it holds for a sink whose inbox replay runs). The local API adds the
    /// count to the connection's next `events.dropped` event. Default: nothing.
    func reportShed(_ count: UInt64)

    /// Writes out the events emitted so far now, instead of at the end of the loop turn (the
    /// router calls it, on its loop, when a burst of received datagrams has been handled). Default:
    /// nothing (the sink delivers as it emits).
    func flushNow()
}

extension DeliveryEventSink {
    /// Sinks that cannot report drops ignore them.
    public func reportShed(_ count: UInt64) {}

    /// Sinks that deliver as they emit have nothing to flush.
    public func flushNow() {}
}
