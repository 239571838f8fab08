import MeshCore
import Foundation
import MeshCrypto

/// Names one pairing attempt: the invitation it began under and its number within it.
///
/// The invitation counts an attempt's end only when the ID is one of its own running attempts,
/// so an attempt that began under a code since replaced neither succeeds nor counts against the
/// new code, and ending the same attempt twice counts once.
public struct PairingAttemptID: Hashable, Sendable {
    /// ``PairingInvitationState/serial`` of the invitation the attempt began under.
    public let invitation: UInt64
    /// The attempt's number within that invitation, from 1.
    public let number: UInt64

    /// Creates an ID (the invitation hands them out; public for tests).
    public init(invitation: UInt64, number: UInt64) {
        self.invitation = invitation
        self.number = number
    }
}

/// A live invitation on the inviter: the code, its expiry, its failed attempts and whether it
/// was used.
///
/// The rules (docs/PAIRING.md, "The invitation"):
/// - an attempt can begin only while the code is live: before ``expiresAt``, not used, and with
///   fewer than `maxFailedAttempts` attempts failed *or still running* — so concurrent
///   connections cannot buy extra guesses;
/// - every attempt that does not end in ``attemptSucceeded(_:)`` must end in
///   ``attemptFailed(_:)`` (wrong code, bad message, timeout, peer vanished); an attempt left
///   hanging keeps counting against the code, which errs on the safe side;
/// - only attempts this invitation began count (``PairingAttemptID``);
/// - the first success uses the code up.
///
/// A plain value: the node keeps it inside its actor and passes the time in.
public struct PairingInvitationState: Sendable {
    /// Where an invitation stands.
    public enum State: Sendable, Equatable {
        /// Accepting attempts.
        case live
        /// A device paired with it; it accepts nothing more.
        case used
        /// Its lifetime passed.
        case expired
        /// It saw `maxFailedAttempts` failed attempts.
        case invalidated
    }

    /// The code this invitation shows.
    public let code: PairingCode
    /// Tells this invitation's attempts from those of the codes before it (the node numbers
    /// its invitations).
    public let serial: UInt64
    /// When the code was created.
    public let issuedAt: Date
    /// How long the code accepts new attempts.
    public let lifetime: TimeInterval
    /// Failed attempts that invalidate the code (at least 1).
    public let maxFailedAttempts: Int
    /// Whether a device that is already paired may be paired again with this code (its record
    /// and pair key replaced); `false` refuses it.
    public let allowsReplacing: Bool
    /// Attempts that ended in ``attemptFailed(_:)``.
    public private(set) var failedAttempts = 0
    private var running: Set<UInt64> = []
    private var attemptsBegun: UInt64 = 0
    private var used = false
    private var sawExpiry = false

    /// A new, live invitation for `code`, valid for `lifetime` seconds from `issuedAt`.
    public init(code: PairingCode, issuedAt: Date, lifetime: TimeInterval, maxFailedAttempts: Int = 3,
                serial: UInt64 = 0, allowsReplacing: Bool = false) {
        self.code = code
        self.serial = serial
        self.issuedAt = issuedAt
        self.lifetime = lifetime
        self.maxFailedAttempts = max(1, maxFailedAttempts)
        self.allowsReplacing = allowsReplacing
    }

    /// When the code stops accepting new attempts.
    public var expiresAt: Date { issuedAt.addingTimeInterval(lifetime) }

    /// Attempts begun and not yet ended.
    public var attemptsInProgress: Int { running.count }

    /// The state as of the last call that was given the time (``beginAttempt(at:identity:)``
    /// or ``refresh(at:)``); use ``state(at:)`` for the state at a given moment.
    public var state: State {
        if failedAttempts >= maxFailedAttempts { return .invalidated }
        if used { return .used }
        if sawExpiry { return .expired }
        return .live
    }

    /// The state at `now`.
    public func state(at now: Date) -> State {
        let recorded = state
        if recorded == .live, now >= expiresAt { return .expired }
        return recorded
    }

    /// Records expiry when `now` is past ``expiresAt`` (so ``state`` reports it).
    public mutating func refresh(at now: Date) {
        if now >= expiresAt { sawExpiry = true }
    }

    /// `true` when ``beginAttempt(at:identity:)`` would start an attempt at `now`: not expired,
    /// not used, not invalidated, and a failure slot free for one more running attempt.
    public func isUsable(at now: Date) -> Bool {
        state(at: now) == .live && failedAttempts + attemptsInProgress < maxFailedAttempts
    }

    /// Starts a responder for one incoming attempt and counts it as running. Call it only once
    /// the joiner's first message passed ``PairingResponder/checkHello(_:)``.
    ///
    /// Throws `MeshError.pairingCodeInvalidated`, `.pairingCodeUsed`, `.pairingExpired` or
    /// `.pairingBusy` (as many attempts running as failures left) when no attempt may begin,
    /// and ``PairingError/invalidIdentity(_:)`` when `identity` cannot be sent.
    public mutating func beginAttempt(at now: Date, identity: PairingLocalIdentity) throws -> PairingResponder {
        refresh(at: now)
        switch state {
        case .invalidated: throw MeshError.pairingCodeInvalidated
        case .used: throw MeshError.pairingCodeUsed
        case .expired: throw MeshError.pairingExpired
        case .live: break
        }
        guard failedAttempts + attemptsInProgress < maxFailedAttempts else { throw MeshError.pairingBusy }
        let validated = try identity.validated()
        attemptsBegun += 1
        let attempt = PairingAttemptID(invitation: serial, number: attemptsBegun)
        running.insert(attempt.number)
        return PairingResponder(code: code, identity: validated, attempt: attempt)
    }

    /// Ends `attempt`, which finished: uses the code up.
    ///
    /// Returns `false` — the caller then discards the outcome and closes without sending
    /// message 4 — when the code was already used by another attempt, or `attempt` is not one of
    /// this invitation's running attempts (it began under a code since replaced, or ended
    /// already).
    @discardableResult
    public mutating func attemptSucceeded(_ attempt: PairingAttemptID) -> Bool {
        guard attempt.invitation == serial, running.remove(attempt.number) != nil else { return false }
        guard !used, failedAttempts < maxFailedAttempts else { return false }
        used = true
        return true
    }

    /// Ends `attempt`, which failed (wrong code, bad message, unproven key, timeout, peer
    /// vanished); the `maxFailedAttempts`-th failure invalidates the code. Returns `false`, and
    /// counts nothing, when `attempt` is not one of this invitation's running attempts.
    @discardableResult
    public mutating func attemptFailed(_ attempt: PairingAttemptID) -> Bool {
        guard attempt.invitation == serial, running.remove(attempt.number) != nil else { return false }
        failedAttempts += 1
        return true
    }
}
