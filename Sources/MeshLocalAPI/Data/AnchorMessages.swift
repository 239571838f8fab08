import Foundation
import SessionMesh

// JSON bodies of `anchor.set` (0x0105) and the `anchor` event (0x0184).

/// A `SessionTimerAnchor` on the local API: instants are seconds since 1970-01-01 UTC as JSON
/// numbers (fractions allowed), durations are seconds.
///
/// `{"startedAt": 1763768400.25, "accumulatedElapsedBeforeAnchor": 12.5, "isPaused": false,
///   "pauseStartedAt": …?, "expectedEndAt": …?, "stepStartedAt": …?}`
public struct MeshTimerAnchorBody: Codable, Sendable, Equatable {
    /// The anchor instant (start or latest resume), seconds since 1970.
    public var startedAt: Double
    /// Active time before `startedAt`, seconds.
    public var accumulatedElapsedBeforeAnchor: Double
    /// When the current pause began, seconds since 1970.
    public var pauseStartedAt: Double?
    /// Whether the timer is paused.
    public var isPaused: Bool
    /// A countdown's end, seconds since 1970.
    public var expectedEndAt: Double?
    /// When the current step began, seconds since 1970.
    public var stepStartedAt: Double?

    /// Creates a body from its fields.
    public init(startedAt: Double, accumulatedElapsedBeforeAnchor: Double, pauseStartedAt: Double? = nil,
                isPaused: Bool, expectedEndAt: Double? = nil, stepStartedAt: Double? = nil) {
        self.startedAt = startedAt
        self.accumulatedElapsedBeforeAnchor = accumulatedElapsedBeforeAnchor
        self.pauseStartedAt = pauseStartedAt
        self.isPaused = isPaused
        self.expectedEndAt = expectedEndAt
        self.stepStartedAt = stepStartedAt
    }

    /// The body of `anchor`.
    public init(_ anchor: SessionTimerAnchor) {
        self.init(startedAt: anchor.startedAt.timeIntervalSince1970,
                  accumulatedElapsedBeforeAnchor: anchor.accumulatedElapsedBeforeAnchor,
                  pauseStartedAt: anchor.pauseStartedAt?.timeIntervalSince1970,
                  isPaused: anchor.isPaused,
                  expectedEndAt: anchor.expectedEndAt?.timeIntervalSince1970,
                  stepStartedAt: anchor.stepStartedAt?.timeIntervalSince1970)
    }

    /// The anchor this body describes.
    public var anchor: SessionTimerAnchor {
        SessionTimerAnchor(startedAt: Date(timeIntervalSince1970: startedAt),
                           accumulatedElapsedBeforeAnchor: accumulatedElapsedBeforeAnchor,
                           pauseStartedAt: pauseStartedAt.map(Date.init(timeIntervalSince1970:)),
                           isPaused: isPaused,
                           expectedEndAt: expectedEndAt.map(Date.init(timeIntervalSince1970:)),
                           stepStartedAt: stepStartedAt.map(Date.init(timeIntervalSince1970:)))
    }

    /// Largest magnitude of an instant or duration, in seconds (about 317 000 years).
    public static let maximumMagnitude = 1e13

    /// Throws `invalid-argument` when a number is not finite or beyond `maximumMagnitude`, or
    /// the accumulator is negative.
    public func validate(operation: LocalAPIOperation) throws(LocalAPIErrorBody) {
        let numbers = [startedAt, accumulatedElapsedBeforeAnchor] + [pauseStartedAt, expectedEndAt, stepStartedAt].compactMap { $0 }
        guard numbers.allSatisfy({ $0.isFinite && abs($0) < Self.maximumMagnitude }) else {
            throw LocalAPIDataError.invalidArgument(operation, "anchor instants and durations must be finite numbers of seconds below 1e13")
        }
        guard accumulatedElapsedBeforeAnchor >= 0 else {
            throw LocalAPIDataError.invalidArgument(operation, "anchor 'accumulatedElapsedBeforeAnchor' must not be negative")
        }
    }
}

/// `anchor.set` request: `{"sessionID", "featureID", "revision": N, "anchor": {…}}`. The daemon
/// keeps and forwards the highest revision per session; the reply is `MeshAnchorSetReply`.
public struct MeshAnchorSetRequest: Codable, Sendable, Equatable {
    /// The session the timer belongs to.
    public var sessionID: UUID
    /// The session's feature.
    public var featureID: String
    /// Latest wins: a lower revision than the stored one is ignored.
    public var revision: UInt64
    /// The timer, in this device's clock.
    public var anchor: MeshTimerAnchorBody

    /// Creates a request.
    public init(sessionID: UUID, featureID: String, revision: UInt64, anchor: MeshTimerAnchorBody) {
        self.sessionID = sessionID
        self.featureID = featureID
        self.revision = revision
        self.anchor = anchor
    }
}

/// `anchor.set` reply: `{"stored": bool}` (false when a higher revision was already stored).
public struct MeshAnchorSetReply: Codable, Sendable, Equatable {
    /// Whether this revision became the session's anchor.
    public var stored: Bool
    /// Creates a reply.
    public init(stored: Bool) { self.stored = stored }
}

/// `anchor` event: a peer's anchor with every instant ALREADY rewritten into this device's
/// clock (by the estimated clock offset), so `anchor.anchor.elapsed(at: now)` is right here.
public struct MeshAnchorEvent: Codable, Sendable, Equatable {
    /// The session.
    public var sessionID: UUID
    /// The session's feature.
    public var featureID: String
    /// The sender's revision.
    public var revision: UInt64
    /// The timer, in this device's clock.
    public var anchor: MeshTimerAnchorBody
    /// Full device ID of the peer that set it.
    public var from: String

    /// Creates an event.
    public init(sessionID: UUID, featureID: String, revision: UInt64, anchor: MeshTimerAnchorBody, from: String) {
        self.sessionID = sessionID
        self.featureID = featureID
        self.revision = revision
        self.anchor = anchor
        self.from = from
    }
}
