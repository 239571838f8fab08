import NIOCore

/// The node's stream paths by number: which are open, who may open one (a rate per source
/// address and `UnauthenticatedSlots`), and where a connection that has not authenticated
/// stands (first message, pairing attempt end). Bookkeeping and decisions only: `ConnectionGate`
/// closes channels, counts refusals and arms the deadline timers.
struct ConnectionTable {
    /// Why a new inbound connection is refused (each has a counter).
    enum Refusal: Sendable, Equatable {
        /// The source address connects faster than its rate.
        case rateLimited
        /// The source holds its share of unauthenticated slots.
        case sourceFull
        /// Every unauthenticated slot is taken and none may be evicted.
        case full
    }

    /// The answer to an inbound connection.
    enum Admission {
        /// Admitted as connection `id`; `evicted` (a stranger's connection that had not sent
        /// its first message) made room and must be closed.
        case admitted(id: UInt64, evicted: (id: UInt64, path: (any ChannelPath)?)?)
        case refused(Refusal)
    }

    /// Open connections by number (inbound and outgoing).
    private(set) var open: [UInt64: any ChannelPath] = [:]
    private var nextID: UInt64 = 1
    private(set) var unauthenticated: UnauthenticatedSlots
    private var rateLimiter: HandshakeRateLimiter
    /// Pairing connections whose first message is awaited under the first-message deadline.
    private var pairingFirstMessagePending: Set<UInt64> = []
    /// Monotonic instant each pairing attempt must end by, by connection.
    private var pairingAttemptEnds: [UInt64: UInt64] = [:]
    /// The deadline timer of each connection that has not authenticated (it closes the
    /// connection when it fires first).
    private var deadlines: [UInt64: Scheduled<Void>] = [:]

    init(tuning: ChannelTuning) {
        rateLimiter = HandshakeRateLimiter(ratePerSecond: tuning.handshakesPerSecondPerSource, burst: tuning.handshakeBurstPerSource)
        unauthenticated = UnauthenticatedSlots(limits: .init(
            total: tuning.maximumUnauthenticatedConnections,
            perSource: tuning.maximumUnauthenticatedPerSource,
            reservedForKnown: tuning.unauthenticatedSlotsReservedForPaired))
    }

    /// An accepted connection from `source` at monotonic `now`; `known`: the address belongs
    /// to a paired device (it may use the reserved slots).
    mutating func admit(_ path: any ChannelPath, source: String, known: Bool, now: UInt64) -> Admission {
        guard rateLimiter.allow(source: source, now: now) else { return .refused(.rateLimited) }
        let id = nextID
        switch unauthenticated.admit(id, source: source, known: known, now: now) {
        case .refuse(.sourceFull): return .refused(.sourceFull)
        case .refuse(.full): return .refused(.full)
        case .admit(let evicting):
            nextID += 1
            open[id] = path
            return .admitted(id: id, evicted: evicting.map { ($0, open[$0]) })
        }
    }

    /// Registers an outgoing connection: its number.
    mutating func register(_ path: any ChannelPath) -> UInt64 {
        let id = nextID
        nextID += 1
        open[id] = path
        return id
    }

    /// The first message of `id` passed: it is no longer evictable. False when the connection
    /// is not an unauthenticated one (already authenticated, or gone).
    mutating func engage(_ id: UInt64) -> Bool {
        guard unauthenticated.contains(id) else { return false }
        unauthenticated.engage(id)
        return true
    }

    /// A pairing message arrived on `id`: whether its deadline is to be armed now. The first
    /// time (the hello, still under the first-message deadline armed at accept) it is not, and
    /// the connection is marked; the next time the connection is engaged.
    mutating func pairingMessageArrived(_ id: UInt64) -> Bool {
        guard !unauthenticated.isEngaged(id) else { return true }
        guard !pairingFirstMessagePending.insert(id).inserted else { return false }
        pairingFirstMessagePending.remove(id)
        unauthenticated.engage(id)
        return true
    }

    /// A pairing attempt on `id` began at `now` and may last `duration` ns.
    mutating func pairingAttemptBegan(_ id: UInt64, now: UInt64, duration: UInt64) {
        let (end, overflow) = now.addingReportingOverflow(duration)
        pairingAttemptEnds[id] = overflow ? .max : end
    }

    /// Nanoseconds left of the pairing attempt on `id` at `now` (0 when none or past).
    func pairingAttemptLeft(_ id: UInt64, now: UInt64) -> UInt64 {
        guard let end = pairingAttemptEnds[id], end > now else { return 0 }
        return end - now
    }

    /// The pairing attempt on `id` ended (it authenticated as a pairing).
    mutating func pairingAttemptEnded(_ id: UInt64) { pairingAttemptEnds.removeValue(forKey: id) }

    /// `timer` is `id`'s deadline from now on: the deadline it replaces, to cancel.
    mutating func setDeadline(_ id: UInt64, _ timer: Scheduled<Void>) -> Scheduled<Void>? {
        deadlines.updateValue(timer, forKey: id)
    }

    /// `id`'s deadline fired: whether to close the connection (false when it authenticated or
    /// ended meanwhile).
    mutating func deadlinePassed(_ id: UInt64) -> Bool { deadlines.removeValue(forKey: id) != nil }

    /// Drops `id`'s deadline (its connection is being closed): the timer, to cancel.
    mutating func dropDeadline(_ id: UInt64) -> Scheduled<Void>? { deadlines.removeValue(forKey: id) }

    /// `id` authenticated: it no longer counts against the unauthenticated slots nor has a
    /// deadline; the deadline's timer, to cancel.
    @discardableResult
    mutating func authenticated(_ id: UInt64) -> Scheduled<Void>? {
        unauthenticated.release(id)
        return deadlines.removeValue(forKey: id)
    }

    /// `id` closed: forgotten everywhere; its deadline's timer, to cancel.
    @discardableResult
    mutating func ended(_ id: UInt64) -> Scheduled<Void>? {
        open.removeValue(forKey: id)
        unauthenticated.release(id)
        pairingAttemptEnds.removeValue(forKey: id)
        pairingFirstMessagePending.remove(id)
        return deadlines.removeValue(forKey: id)
    }
}
