import Foundation

// JSON bodies of the data operations (docs/LOCAL-API.md § data operations). Keys are the
// property names. UUIDs are strings in the canonical 8-4-4-4-12 form.

struct AttachRequest: Codable, Sendable, Equatable {
    var features: [String]
    var sessionID: UUID?
    var app: String?
}

struct AttachReply: Codable, Sendable, Equatable {
    struct Peer: Codable, Sendable, Equatable {
        var deviceID: String
        var name: String
        var reachable: Bool
    }
    var attachmentID: UInt64
    var localDeviceID: String
    var peers: [Peer]
}

struct SendReply: Codable, Sendable, Equatable {
    var eventID: UUID
    var outcome: String
    var peers: Int
}

struct SnapshotPublishReply: Codable, Sendable, Equatable {
    var revision: UInt64
    var stored: Bool
}

struct SnapshotRequestBody: Codable, Sendable, Equatable {
    var sessionID: UUID
    var featureID: String
    var peer: String?
}

struct SnapshotLatestRequest: Codable, Sendable, Equatable {
    var featureID: String
    var peer: String?
    var sessionID: UUID?
}

/// A timer anchor in JSON: instants are seconds since 1970 (fractional).
struct AnchorBody: Codable, Sendable, Equatable {
    var startedAt: Double
    var accumulatedElapsedBeforeAnchor: Double
    var pauseStartedAt: Double?
    var isPaused: Bool
    var expectedEndAt: Double?
    var stepStartedAt: Double?
}

struct AnchorSetRequest: Codable, Sendable, Equatable {
    var sessionID: UUID
    var featureID: String
    var revision: UInt64
    var anchor: AnchorBody
}

struct StoredReply: Codable, Sendable, Equatable {
    var stored: Bool
}

struct SessionAnnounceRequest: Codable, Sendable, Equatable {
    var sessionID: UUID
    var featureID: String
    var owner: String
    var status: String
}

struct SessionCloseRequest: Codable, Sendable, Equatable {
    var sessionID: UUID
    var featureID: String
}

struct SessionCloseReply: Codable, Sendable, Equatable {
    var delivered: [String]
    var queued: [String]
}

struct SessionsRequest: Codable, Sendable, Equatable {
    var featureID: String?
}

/// A directory row; `change` is set only in session events.
struct SessionBody: Codable, Sendable, Equatable {
    var sessionID: UUID
    var featureID: String
    var owner: String
    var status: String
    var updatedAt: Double
    var revision: UInt64
    var sourcePeer: String?
    var change: String?
}

struct SessionsReply: Codable, Sendable, Equatable {
    var sessions: [SessionBody]
}

struct InboxAckRequest: Codable, Sendable, Equatable {
    var ids: [Int64]
}

struct InboxAckReply: Codable, Sendable, Equatable {
    var acknowledged: Int
}

struct QueueItem: Codable, Sendable, Equatable {
    var id: Int64
    var peer: String
    var featureID: String
    var eventID: UUID
    var ageSeconds: Double
    var attempts: Int
    var size: Int
}

struct QueueReply: Codable, Sendable, Equatable {
    var items: [QueueItem]
}

struct QueueCancelRequest: Codable, Sendable, Equatable {
    var id: Int64
}

struct WatermarkBody: Codable, Sendable, Equatable {
    var sessionID: UUID
    var featureID: String
    var peer: String
    var sequence: UInt64
}

struct ReachabilityBody: Codable, Sendable, Equatable {
    var peer: String
    var featureID: String?
    var reachable: Bool
    var reason: String
}

/// The anchor event: as anchor.set plus `from`, instants in this device's clock.
struct AnchorEventBody: Codable, Sendable, Equatable {
    var sessionID: UUID
    var featureID: String
    var revision: UInt64
    var anchor: AnchorBody
    var from: String
}
