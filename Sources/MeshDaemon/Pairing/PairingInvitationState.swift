import Foundation
import MeshCrypto

/// A live invitation on the inviter: the code, its expiry, its failed attempts and whether it
/// was used.
///
/// The rules (docs/PAIRING.md, "Expiry and single use"):
/// - an attempt can begin only while the code is live: before ``expiresAt``, not used, and with
///   fewer than `maxFailedAttempts` attempts failed *or still running* — so concurrent
///   connections cannot buy extra guesses;
/// - every attempt that does not end in ``attemptSucceeded()`` must end in
///   ``attemptFailed()`` (wrong code, bad message, timeout, peer vanished); an attempt left
///   hanging keeps counting against the code, which errs on the safe side;
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
    /// When the code was created.
    public let issuedAt: Date
    /// How long the code accepts new attempts.
    public let lifetime: TimeInterval
    /// Failed attempts that invalidate the code (at least 1).
    public let maxFailedAttempts: Int
    /// Attempts that ended in ``attemptFailed()``.
    public private(set) var failedAttempts = 0
    /// Attempts begun and not yet ended.
    public private(set) var attemptsInProgress = 0
    private var used = false
    private var sawExpiry = false

    /// A new, live invitation for `code`, valid for `lifetime` seconds from `issuedAt`.
    public init(code: PairingCode, issuedAt: Date, lifetime: TimeInterval, maxFailedAttempts: Int = 3) {
        self.code = code
        self.issuedAt = issuedAt
        self.lifetime = lifetime
        self.maxFailedAttempts = max(1, maxFailedAttempts)
    }

    /// When the code stops accepting new attempts.
    public var expiresAt: Date { issuedAt.addingTimeInterval(lifetime) }

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

    /// Starts a responder for one incoming attempt and counts it as running.
    ///
    /// Throws `ControlError.pairingCodeInvalidated`, `.pairingCodeUsed`, `.pairingExpired` or
    /// `.pairingBusy` (as many attempts running as failures left) when no attempt may begin,
    /// and ``PairingError/invalidIdentity(_:)`` when `identity` cannot be sent.
    public mutating func beginAttempt(at now: Date, identity: PairingIdentity) throws -> PairingResponder {
        refresh(at: now)
        switch state {
        case .invalidated: throw ControlError.pairingCodeInvalidated
        case .used: throw ControlError.pairingCodeUsed
        case .expired: throw ControlError.pairingExpired
        case .live: break
        }
        guard failedAttempts + attemptsInProgress < maxFailedAttempts else { throw ControlError.pairingBusy }
        let responder = PairingResponder(code: code, identity: try identity.validated())
        attemptsInProgress += 1
        return responder
    }

    /// Ends a running attempt that finished: uses the code up.
    ///
    /// Returns `false` when the code was already used by another attempt (or no attempt was
    /// running); the caller then discards that outcome and closes without sending message 4.
    @discardableResult
    public mutating func attemptSucceeded() -> Bool {
        guard attemptsInProgress > 0 else { return false }
        attemptsInProgress -= 1
        guard !used, failedAttempts < maxFailedAttempts else { return false }
        used = true
        return true
    }

    /// Ends a running attempt that failed (wrong code, bad message, timeout, peer vanished);
    /// the `maxFailedAttempts`-th failure invalidates the code. Call it once per failed
    /// attempt; a call with no attempt running still counts a failure (erring on the safe side).
    public mutating func attemptFailed() {
        if attemptsInProgress > 0 { attemptsInProgress -= 1 }
        failedAttempts += 1
    }
}
