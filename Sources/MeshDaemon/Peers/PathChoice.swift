/// Which path one peer's channel runs on: direct (the socket transport) or the relay, decided
/// from what authenticated and when, without I/O.
///
/// - Direct is preferred: a direct path that authenticated is used.
/// - When no direct path works for `relayDelay` (2 s) — none authenticated since the peer's
///   channel was lost or the node started — and a relay is configured, the relay is dialled.
/// - On the relay, a direct path that authenticates takes over again.
/// - Between two working paths the channel changes at most once per `minimumChangeInterval`
///   (30 s), so flapping paths do not move it back and forth; a switch that is held is made
///   by a later `tick` once the interval passed, if that path still works. Losing the only
///   working path is never held: the other path is used as soon as it works.
///
/// The node feeds it each path's authentication and loss and the timer pass's `tick`, and
/// carries out the returned `Action`. Instants are monotonic nanoseconds.
struct PathChoice: Sendable, Equatable {
    /// A kind of path, as far as this choice is concerned.
    enum Kind: Sendable, Equatable { case direct, relay }

    /// What the node does next.
    enum Action: Sendable, Equatable {
        case none
        /// Open a relay stream path to the peer (no direct path worked for `relayDelay`).
        case dialRelay
        /// Run the channel on a path of this kind from now on (closing the other one).
        case use(Kind)
    }

    static let relayDelay: UInt64 = 2_000_000_000
    static let minimumChangeInterval: UInt64 = 30_000_000_000

    /// Whether a relay is configured.
    let relayConfigured: Bool
    /// The kind the channel runs on now; nil while none is active.
    private(set) var current: Kind?
    /// Which paths have an authenticated channel now.
    private(set) var directUp = false
    private(set) var relayUp = false
    /// Since when no direct path has worked (nil while one does).
    private var directDownSince: UInt64?
    /// When the channel last changed from one working path to the other.
    private var lastChangeAt: UInt64?
    /// A relay dial is under way (not asked again until it ended).
    private var relayDialing = false

    /// A peer with no channel yet, at monotonic `now`.
    init(relayConfigured: Bool, now: UInt64) {
        self.relayConfigured = relayConfigured
        directDownSince = now
    }

    /// A direct path authenticated at `now`.
    mutating func directAuthenticated(now: UInt64) -> Action {
        directUp = true
        directDownSince = nil
        return settle(now: now)
    }

    /// The direct path was lost at `now`.
    mutating func directLost(now: UInt64) -> Action {
        directUp = false
        directDownSince = directDownSince ?? now
        if current == .direct { current = nil }
        return settle(now: now)
    }

    /// A relay path authenticated at `now`.
    mutating func relayAuthenticated(now: UInt64) -> Action {
        relayUp = true
        relayDialing = false
        return settle(now: now)
    }

    /// The relay path was lost, or its dial failed, at `now`.
    mutating func relayLost(now: UInt64) -> Action {
        relayUp = false
        relayDialing = false
        if current == .relay { current = nil }
        return settle(now: now)
    }

    /// The timer pass at `now`: the relay once no direct path worked for `relayDelay`; a held
    /// switch once `minimumChangeInterval` passed.
    mutating func tick(now: UInt64) -> Action { settle(now: now) }

    /// The one decision every input ends in.
    private mutating func settle(now: UInt64) -> Action {
        let wanted: Kind? = directUp ? .direct : (relayUp ? .relay : nil)
        if let wanted, wanted != current {
            if current != nil, let lastChangeAt, now &- lastChangeAt < Self.minimumChangeInterval { return .none }
            if current != nil { lastChangeAt = now }
            current = wanted
            return .use(wanted)
        }
        if relayConfigured, !directUp, !relayUp, !relayDialing, let since = directDownSince,
           now &- since >= Self.relayDelay {
            relayDialing = true
            return .dialRelay
        }
        return .none
    }
}
