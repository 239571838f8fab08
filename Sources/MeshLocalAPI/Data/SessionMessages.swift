import Foundation
import MeshCore

// JSON bodies of `session.announce` (0x0106), `session.close` (0x0107), `sessions` (0x0108) and
// the `session` event (0x0185).

/// `session.announce` request: add or update a session in the replicated directory. Reply `{}`.
public struct MeshSessionAnnounceRequest: Codable, Sendable, Equatable {
    /// The session (a new session is a new UUID).
    public var sessionID: UUID
    /// Its feature.
    public var featureID: String
    /// Who runs it: a device ID or an app name.
    public var owner: String
    /// `running`, `paused`, … (free-form; `closed` only through `session.close`).
    public var status: String

    /// Creates a request.
    public init(sessionID: UUID, featureID: String, owner: String, status: String) {
        self.sessionID = sessionID
        self.featureID = featureID
        self.owner = owner
        self.status = status
    }
}

/// `session.close` request; the reply (`MeshSessionCloseReply`) comes only after the closing
/// envelope and snapshot were delivered to reachable peers or durably queued for the others.
public struct MeshSessionCloseRequest: Codable, Sendable, Equatable {
    /// The session to close.
    public var sessionID: UUID
    /// Its feature.
    public var featureID: String

    /// Creates a request.
    public init(sessionID: UUID, featureID: String) {
        self.sessionID = sessionID
        self.featureID = featureID
    }
}

/// `session.close` reply: which peers have the close, and which will get it from the queue.
public struct MeshSessionCloseReply: Codable, Sendable, Equatable {
    /// Device IDs the closing envelope and snapshot were delivered to.
    public var delivered: [String]
    /// Device IDs for which they are durably queued.
    public var queued: [String]

    /// Creates a reply.
    public init(delivered: [String], queued: [String]) {
        self.delivered = delivered
        self.queued = queued
    }
}

/// `sessions` request: `{"featureID": "demo"?}` (every feature when absent).
public struct MeshSessionsRequest: Codable, Sendable, Equatable {
    /// Narrow to one feature.
    public var featureID: String?
    /// Creates a request.
    public init(featureID: String? = nil) { self.featureID = featureID }
}

/// One entry of the session directory.
public struct MeshSessionRecord: Codable, Sendable, Equatable, Hashable {
    /// The session.
    public var sessionID: UUID
    /// Its feature.
    public var featureID: String
    /// Who runs it: a device ID or an app name.
    public var owner: String
    /// `running`, `paused`, `closed`, …
    public var status: String
    /// When the entry last changed, seconds since 1970.
    public var updatedAt: Double
    /// Directory revision of the entry; a lower one never replaces a higher one.
    public var revision: UInt64
    /// The device the entry came from; absent for sessions announced on this device.
    public var sourcePeer: String?

    /// Creates an entry.
    public init(sessionID: UUID, featureID: String, owner: String, status: String, updatedAt: Double,
                revision: UInt64, sourcePeer: String? = nil) {
        self.sessionID = sessionID
        self.featureID = featureID
        self.owner = owner
        self.status = status
        self.updatedAt = updatedAt
        self.revision = revision
        self.sourcePeer = sourcePeer
    }
}

/// `sessions` reply.
public struct MeshSessionsReply: Codable, Sendable, Equatable {
    /// The directory (local and replicated entries).
    public var sessions: [MeshSessionRecord]
    /// Creates a reply.
    public init(sessions: [MeshSessionRecord]) { self.sessions = sessions }
}

/// `session` event: a directory entry (flat, as in `sessions`) plus what changed.
public struct MeshSessionEvent: Codable, Sendable, Equatable {
    /// What happened to the entry.
    public typealias Change = SessionChange

    /// The session.
    public var sessionID: UUID
    /// Its feature.
    public var featureID: String
    /// Who runs it.
    public var owner: String
    /// Its status.
    public var status: String
    /// When the entry last changed, seconds since 1970.
    public var updatedAt: Double
    /// Directory revision.
    public var revision: UInt64
    /// The device the entry came from.
    public var sourcePeer: String?
    /// What changed.
    public var change: Change

    /// Creates an event from a record.
    public init(_ record: MeshSessionRecord, change: Change) {
        sessionID = record.sessionID
        featureID = record.featureID
        owner = record.owner
        status = record.status
        updatedAt = record.updatedAt
        revision = record.revision
        sourcePeer = record.sourcePeer
        self.change = change
    }

    /// The directory entry.
    public var record: MeshSessionRecord {
        MeshSessionRecord(sessionID: sessionID, featureID: featureID, owner: owner, status: status,
                      updatedAt: updatedAt, revision: revision, sourcePeer: sourcePeer)
    }
}
