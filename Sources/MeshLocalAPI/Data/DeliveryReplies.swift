import Foundation

// JSON replies of `send` (0x0101) and `snapshot.publish` (0x0102), whose requests are binary.

/// `send` reply.
///
/// `{"eventID": "UUID", "outcome": "sent"|"queued"|"pending", "peers": N}`. For a reliable send
/// the reply comes after the item is durably in the outbox of every target.
public struct MeshSendReply: Codable, Sendable, Equatable {
    /// What happened to the envelope.
    public enum Outcome: String, Codable, Sendable, Equatable {
        /// Handed to the datagram or stream path of every target.
        case sent
        /// Durably in the outbox (reliable, or a realtime fallback).
        case queued
        /// Waiting in the pre-activation buffer for a channel to come up.
        case pending
    }

    /// The envelope's event id.
    public var eventID: UUID
    /// What happened to it (the least-delivered outcome across targets).
    public var outcome: Outcome
    /// How many peers it was addressed to.
    public var peers: Int

    /// Creates a reply.
    public init(eventID: UUID, outcome: Outcome, peers: Int) {
        self.eventID = eventID
        self.outcome = outcome
        self.peers = peers
    }
}

/// `snapshot.publish` reply: `{"revision": N, "stored": true|false}`.
public struct MeshSnapshotPublishReply: Codable, Sendable, Equatable {
    /// The revision in the outbound slot after the call (the published one when stored, else the
    /// equal or higher one the slot kept).
    public var revision: UInt64
    /// False when an equal or higher revision already was in the slot (the slot kept it; a
    /// targeted publish is still sent to its target as a reply).
    public var stored: Bool

    /// Creates a reply.
    public init(revision: UInt64, stored: Bool) {
        self.revision = revision
        self.stored = stored
    }
}
