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
/// - an attempt can begin only while the code is live: before ``expiresAt``, not used, and
///   from a source (a ``SourceKey``) that has fewer than `maxFailedAttemptsPerSource` attempts
///   failed *or still running*, while fewer than `maxFailedAttempts` distinct sources have
///   failed or are running one, this one included — so neither concurrent connections nor
///   one host's retries buy extra guesses;
/// - every attempt that does not end in ``attemptSucceeded(_:)`` must end in
///   ``attemptFailed(_:reachedExchange:)``; it counts against the code only when it got as far
///   as the CPace exchange (the inviter sent its share and confirmation, so the joiner's guess
///   was tested); an attempt left hanging keeps counting, which errs on the safe side;
/// - the code is invalidated once failed attempts came from `maxFailedAttempts` distinct
///   sources: a single host cannot burn a code; at most
///   `(maxFailedAttempts - 1) * maxFailedAttemptsPerSource + 1` guesses are tested per code;
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
    /// Distinct sources whose failed attempts invalidate the code (at least 1).
    public let maxFailedAttempts: Int
    /// Attempts one source may have failed or running at once (at least 1); past it, that
    /// source is refused and the code stays live.
    public let maxFailedAttemptsPerSource: Int
    /// Whether a device that is already paired may be paired again with this code (its record
    /// and pair key replaced); `false` refuses it.
    public let allowsReplacing: Bool
    /// Attempts that ended in ``attemptFailed(_:reachedExchange:)`` after the CPace exchange.
    public private(set) var failedAttempts = 0
    /// Counted failures per source.
    private var failuresBySource: [String: Int] = [:]
    /// Running attempts by number, with their source.
    private var running: [UInt64: String] = [:]
    private var attemptsBegun: UInt64 = 0
    private var used = false
    private var sawExpiry = false

    /// A new, live invitation for `code`, valid for `lifetime` seconds from `issuedAt`.
    public init(code: PairingCode, issuedAt: Date, lifetime: TimeInterval, maxFailedAttempts: Int = 3,
                maxFailedAttemptsPerSource: Int = 2, serial: UInt64 = 0, allowsReplacing: Bool = false) {
        self.code = code
        self.serial = serial
        self.issuedAt = issuedAt
        self.lifetime = lifetime
        self.maxFailedAttempts = max(1, maxFailedAttempts)
        self.maxFailedAttemptsPerSource = max(1, maxFailedAttemptsPerSource)
        self.allowsReplacing = allowsReplacing
    }

    /// When the code stops accepting new attempts.
    public var expiresAt: Date { issuedAt.addingTimeInterval(lifetime) }

    /// Attempts begun and not yet ended.
    public var attemptsInProgress: Int { running.count }

    /// Distinct sources with a counted failure.
    public var failedSources: Int { failuresBySource.count }

    /// The state as of the last call that was given the time (``beginAttempt(at:identity:source:)``
    /// or ``refresh(at:)``); use ``state(at:)`` for the state at a given moment.
    public var state: State {
        if failuresBySource.count >= maxFailedAttempts { return .invalidated }
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

    /// `true` when ``beginAttempt(at:identity:source:)`` would start an attempt from `source`
    /// at `now`: not expired, used or invalidated, and room for one more running attempt from
    /// that source.
    public func isUsable(at now: Date, source: String) -> Bool {
        state(at: now) == .live && hasRoom(for: source)
    }

    /// `true` when some attempt could begin at `now`: live, and a source not heard from yet,
    /// or one with room left, may begin one (the code's hint stays advertised while so).
    public func isUsable(at now: Date) -> Bool {
        guard state(at: now) == .live else { return false }
        if involvedSources(adding: nil) < maxFailedAttempts { return true }
        return Set(failuresBySource.keys).union(running.values).contains { attempts(from: $0) < maxFailedAttemptsPerSource }
    }

    /// Starts a responder for one incoming attempt from `source` (the connection's
    /// ``SourceKey``) and counts it as running. Call it only once the joiner's first message
    /// passed ``PairingResponder/checkHello(_:)``.
    ///
    /// Throws `MeshError.pairingCodeInvalidated`, `.pairingCodeUsed`, `.pairingExpired` or
    /// `.pairingBusy` (the source has as many attempts failed or running as it may, or as many
    /// other sources as the code allows are involved) when no attempt may begin, and
    /// ``PairingError/invalidIdentity(_:)`` when `identity` cannot be sent.
    public mutating func beginAttempt(at now: Date, identity: PairingLocalIdentity, source: String) throws -> PairingResponder {
        refresh(at: now)
        switch state {
        case .invalidated: throw MeshError.pairingCodeInvalidated
        case .used: throw MeshError.pairingCodeUsed
        case .expired: throw MeshError.pairingExpired
        case .live: break
        }
        guard hasRoom(for: source) else { throw MeshError.pairingBusy }
        let validated = try identity.validated()
        attemptsBegun += 1
        let attempt = PairingAttemptID(invitation: serial, number: attemptsBegun)
        running[attempt.number] = source
        return PairingResponder(code: code, identity: validated, attempt: attempt)
    }

    /// Whether `source` may begin one more attempt.
    private func hasRoom(for source: String) -> Bool {
        attempts(from: source) < maxFailedAttemptsPerSource && involvedSources(adding: source) <= maxFailedAttempts
    }

    /// Counted failures plus running attempts of `source`.
    private func attempts(from source: String) -> Int {
        (failuresBySource[source] ?? 0) + running.values.reduce(0) { $0 + ($1 == source ? 1 : 0) }
    }

    /// Sources with a counted failure or a running attempt, plus `extra`.
    private func involvedSources(adding extra: String?) -> Int {
        var sources = Set(failuresBySource.keys).union(running.values)
        if let extra { sources.insert(extra) }
        return sources.count
    }

    /// Ends `attempt`, which finished: uses the code up.
    ///
    /// Returns `false` — the caller then discards the outcome and closes without sending
    /// message 4 — when the code was already used by another attempt, or `attempt` is not one of
    /// this invitation's running attempts (it began under a code since replaced, or ended
    /// already).
    @discardableResult
    public mutating func attemptSucceeded(_ attempt: PairingAttemptID) -> Bool {
        guard attempt.invitation == serial, running.removeValue(forKey: attempt.number) != nil else { return false }
        guard !used, state != .invalidated else { return false }
        used = true
        return true
    }

    /// Ends `attempt`, which failed (wrong code, bad message, unproven key, timeout, peer
    /// vanished). It counts against its source when `reachedExchange` (the inviter's message 2
    /// went out, so the joiner's guess was tested); failures from `maxFailedAttempts` distinct
    /// sources invalidate the code. Returns `false`, and counts nothing, when `attempt` is not
    /// one of this invitation's running attempts.
    @discardableResult
    public mutating func attemptFailed(_ attempt: PairingAttemptID, reachedExchange: Bool = true) -> Bool {
        guard attempt.invitation == serial, let source = running.removeValue(forKey: attempt.number) else { return false }
        guard reachedExchange else { return true }
        failedAttempts += 1
        failuresBySource[source, default: 0] += 1
        return true
    }
}
