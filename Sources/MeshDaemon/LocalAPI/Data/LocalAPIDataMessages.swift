import Foundation

// JSON bodies of the data operations (docs/LOCAL-API.md § data operations). Keys are the
// property names. UUIDs are strings in the canonical 8-4-4-4-12 form.

struct DaemonAttachRequest: Codable, Sendable, Equatable {
    var features: [String]
    var sessionID: UUID?
    var app: String?
}

struct DaemonAttachReply: Codable, Sendable, Equatable {
    struct Peer: Codable, Sendable, Equatable {
        var deviceID: String
        var name: String
        var reachable: Bool
    }
    var attachmentID: UInt64
    var localDeviceID: String
    var peers: [Peer]
}

struct DaemonSendReply: Codable, Sendable, Equatable {
    var eventID: UUID
    var outcome: String
    var peers: Int
}

struct DaemonSnapshotPublishReply: Codable, Sendable, Equatable {
    var revision: UInt64
    var stored: Bool
}

struct DaemonSnapshotRequestBody: Codable, Sendable, Equatable {
    var sessionID: UUID
    var featureID: String
    var peer: String?
}

struct DaemonSnapshotLatestRequest: Codable, Sendable, Equatable {
    var featureID: String
    var peer: String?
    var sessionID: UUID?
}

/// A timer anchor in JSON: instants are seconds since 1970 (fractional).
struct DaemonAnchorBody: Codable, Sendable, Equatable {
    var startedAt: Double
    var accumulatedElapsedBeforeAnchor: Double
    var pauseStartedAt: Double?
    var isPaused: Bool
    var expectedEndAt: Double?
    var stepStartedAt: Double?
}

struct DaemonAnchorSetRequest: Codable, Sendable, Equatable {
    var sessionID: UUID
    var featureID: String
    var revision: UInt64
    var anchor: DaemonAnchorBody
}

struct DaemonStoredReply: Codable, Sendable, Equatable {
    var stored: Bool
}

struct DaemonSessionAnnounceRequest: Codable, Sendable, Equatable {
    var sessionID: UUID
    var featureID: String
    var owner: String
    var status: String
}

struct DaemonSessionCloseRequest: Codable, Sendable, Equatable {
    var sessionID: UUID
    var featureID: String
}

struct DaemonSessionCloseReply: Codable, Sendable, Equatable {
    var delivered: [String]
    var queued: [String]
}

struct DaemonSessionsRequest: Codable, Sendable, Equatable {
    var featureID: String?
}

/// A directory row; `change` is set only in session events.
struct DaemonSessionBody: Codable, Sendable, Equatable {
    var sessionID: UUID
    var featureID: String
    var owner: String
    var status: String
    var updatedAt: Double
    var revision: UInt64
    var sourcePeer: String?
    var change: String?
}

struct DaemonSessionsReply: Codable, Sendable, Equatable {
    var sessions: [DaemonSessionBody]
}

struct DaemonInboxAckRequest: Codable, Sendable, Equatable {
    var ids: [Int64]
}

struct DaemonInboxAckReply: Codable, Sendable, Equatable {
    var acknowledged: Int
}

struct DaemonQueueItem: Codable, Sendable, Equatable {
    var id: Int64
    var peer: String
    var featureID: String
    var eventID: UUID
    var ageSeconds: Double
    var attempts: Int
    var size: Int
}

struct DaemonQueueReply: Codable, Sendable, Equatable {
    var items: [DaemonQueueItem]
}

struct DaemonQueueCancelRequest: Codable, Sendable, Equatable {
    var id: Int64
}

struct DaemonWatermarkBody: Codable, Sendable, Equatable {
    var sessionID: UUID
    var featureID: String
    var peer: String
    var sequence: UInt64
}

struct DaemonReachabilityBody: Codable, Sendable, Equatable {
    var peer: String
    var featureID: String?
    var reachable: Bool
    var reason: String
}

/// The anchor event: as anchor.set plus `from`, instants in this device's clock.
struct DaemonAnchorEventBody: Codable, Sendable, Equatable {
    var sessionID: UUID
    var featureID: String
    var revision: UInt64
    var anchor: DaemonAnchorBody
    var from: String
}
