/// Which path one peer's channel runs on, direct (the socket transport) or the relay, decided
/// from what activated and closed and when, without I/O.
///
/// - Direct is preferred: a channel that authenticates on a direct path is always installed,
///   and while the channel runs on the relay the node keeps dialling direct addresses (its
///   normal dial cadence, discovery's addresses).
/// - When no channel has run for `relayDelay` (no address, every handshake failed, the
///   channel was lost) and the relay can be reached, the relay is dialled — next to any direct
///   dial still waiting on a dead address, never behind it.
/// - Between two working paths the channel changes at most once per `minimumChangeInterval`:
///   after a change, this side starts no direct handshake that would take the channel off the
///   relay until the interval passed (`directDialDelay`). Both ends count the same changes: a
///   relay channel that closed within `handoverWindow` before a direct one was installed was
///   handed over. A lost channel is never held: the relay is dialled `relayDelay` after it
///   closed, and a direct dial is tried at once.
///
/// The node feeds it activations (`activated`), losses (`lost`), the end of relay dials and
/// the timer pass (`tick`), and carries out `dialRelay`. Instants are monotonic nanoseconds.
struct PathChoice: Sendable, Equatable {
    /// A kind of path, as far as this choice is concerned.
    enum Kind: Sendable, Equatable { case direct, relay }

    /// What the node does next.
    enum Action: Sendable, Equatable {
        case none
        /// Open a relay stream path to the peer and handshake on it.
        case dialRelay
    }

    /// How long a peer goes without a channel before the relay is dialled: with the timer
    /// pass (≤ 250 ms) and a handshake through the broker, the channel runs on the relay
    /// within 2 s.
    static let relayDelay: UInt64 = 1_000_000_000
    /// The shortest time between two changes of path while both work.
    static let minimumChangeInterval: UInt64 = 30_000_000_000
    /// The longest wait between two relay dials that failed.
    static let relayRetryMaximum: UInt64 = 30_000_000_000
    /// A relay channel that closed at most this long before a direct one was installed was
    /// handed over, not lost: the side answering a move to direct often sees the relay
    /// connection close (the peer closed it once its direct channel ran) just before the
    /// direct handshake's confirm arrives, and that move is a change like any other.
    static let handoverWindow: UInt64 = 1_000_000_000

    /// The kind the channel runs on now; nil while none is active.
    private(set) var current: Kind?
    /// Since when no channel has run (nil while one does, or before the first timer pass).
    private var downSince: UInt64?
    /// When the channel last moved from one working path to the other kind.
    private(set) var lastChangeAt: UInt64?
    /// The kind of the channel that closed last, and when it closed (nil while one runs).
    private var closedKind: Kind?
    private var closedAt: UInt64 = 0
    /// A relay dial is under way (none is started until it ended).
    private(set) var relayDialing = false
    /// No relay dial before this instant (after failed ones), and the wait after the next failure.
    private var relayRetryAt: UInt64 = 0
    private var relayRetryDelay = Self.relayDelay

    /// A peer with no channel yet; the time without one counts from the first `tick`.
    init() {}

    /// A channel on a path of `kind` was installed at `now` (either side's handshake; it
    /// replaced the one before, if any).
    mutating func activated(_ kind: Kind, now: UInt64) {
        if let current, current != kind {
            lastChangeAt = now
        } else if current == nil, kind == .direct, closedKind == .relay, now &- closedAt <= Self.handoverWindow {
            lastChangeAt = now
        }
        current = kind
        closedKind = nil
        downSince = nil
        if kind == .relay {
            relayDialing = false
            relayRetryDelay = Self.relayDelay
            relayRetryAt = 0
        }
    }

    /// The channel closed at `now` (its path died, its lease expired, it was dropped).
    mutating func lost(now: UInt64) {
        if let current {
            closedKind = current
            closedAt = now
        }
        current = nil
        downSince = downSince ?? now
    }

    /// A relay dial ended at `now` without a channel: `failed` when it could not connect or
    /// its handshake failed (the next waits longer, up to `relayRetryMaximum`); not failed
    /// when it was no longer needed.
    mutating func relayDialEnded(now: UInt64, failed: Bool) {
        relayDialing = false
        guard failed else { return }
        relayRetryAt = now &+ relayRetryDelay
        relayRetryDelay = min(relayRetryDelay * 2, Self.relayRetryMaximum)
    }

    /// The timer pass at `now`; `relayAvailable`: a relay is configured and its broker
    /// connection is up. Dials the relay once no channel ran for `relayDelay`.
    mutating func tick(now: UInt64, relayAvailable: Bool) -> Action {
        guard current == nil else { return .none }
        guard let since = downSince else {
            downSince = now
            return .none
        }
        guard relayAvailable, !relayDialing, now &- since >= Self.relayDelay, now >= relayRetryAt else { return .none }
        relayDialing = true
        return .dialRelay
    }

    /// How long this side waits before starting a direct handshake at `now`: 0, unless the
    /// channel runs on the relay and the last change was less than `minimumChangeInterval` ago.
    func directDialDelay(now: UInt64) -> UInt64 {
        guard current == .relay, let lastChangeAt else { return 0 }
        let elapsed = now &- lastChangeAt
        return elapsed >= Self.minimumChangeInterval ? 0 : Self.minimumChangeInterval - elapsed
    }
}
