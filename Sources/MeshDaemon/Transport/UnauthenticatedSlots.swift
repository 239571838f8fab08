/// Which accepted TCP connections may wait, unauthenticated, for their handshake or pairing.
///
/// Every accepted connection holds a slot until it authenticates or closes. The rules, so that
/// no single host and no crowd of strangers can keep paired devices or a pairing out:
///
/// - a source address holds at most `perSource` slots at once (more are refused at accept);
/// - sources that are not addresses of paired devices ("strangers") share at most
///   `total - reservedForKnown` slots; the last `reservedForKnown` are kept for known sources;
/// - when a newcomer finds its share full, the oldest stranger connection that is still waiting
///   for its first message and has waited at least `evictionAge` is closed to make room, so
///   idle connections cannot hold slots against newcomers (whoever comes has at least
///   `evictionAge`, and then until `total - reservedForKnown` newer strangers came, to send its
///   first message);
/// - a connection whose first message passed (a handshake from a paired key, a pairing attempt
///   under the live code) is *engaged*: it is never evicted, and only its own deadline ends it.
///
/// A pure value: the node passes the monotonic time and acts on the decision (close the
/// victim, refuse the newcomer). The first-message deadline itself is the node's timer.
struct UnauthenticatedSlots: Sendable {
    /// The limits; the defaults are the daemon's.
    struct Limits: Sendable, Equatable {
        /// Slots across all sources.
        var total = 64
        /// Slots one source address may hold at once.
        var perSource = 4
        /// Slots only sources that are addresses of paired devices may use.
        var reservedForKnown = 16
        /// A waiting stranger connection younger than this (ns) is not evicted: long enough
        /// for a LAN round trip, short enough that a newcomer finds an evictable slot unless
        /// strangers open more than `(total - reservedForKnown) / evictionAge` (960) a second.
        var evictionAge: UInt64 = 50_000_000
    }

    /// Why a connection was not admitted.
    enum Refusal: Sendable, Equatable {
        /// Its source already holds `perSource` slots.
        case sourceFull
        /// No slot for its class and none evictable.
        case full
    }

    /// What to do with a new connection.
    enum Decision: Sendable, Equatable {
        /// Admit it; when `evicting` is set, first close that connection (its slot is reused).
        case admit(evicting: UInt64?)
        /// Close it without a byte.
        case refuse(Refusal)
    }

    private struct Entry: Sendable {
        let source: String
        let known: Bool
        let admittedAt: UInt64
        var engaged = false
    }

    let limits: Limits
    private var entries: [UInt64: Entry] = [:]
    /// Connections evicted so far.
    private(set) var evicted: UInt64 = 0

    init(limits: Limits = Limits()) {
        var limits = limits
        limits.total = max(1, limits.total)
        limits.perSource = max(1, limits.perSource)
        limits.reservedForKnown = min(max(0, limits.reservedForKnown), limits.total - 1)
        self.limits = limits
    }

    /// Slots in use.
    var count: Int { entries.count }

    /// Slots `source` holds.
    func count(from source: String) -> Int {
        entries.values.reduce(0) { $0 + ($1.source == source ? 1 : 0) }
    }

    /// Whether `id` holds a slot.
    func contains(_ id: UInt64) -> Bool { entries[id] != nil }

    /// Whether `id` passed its first message.
    func isEngaged(_ id: UInt64) -> Bool { entries[id]?.engaged == true }

    /// Decides about connection `id` from `source` (`known`: an address of a paired device) at
    /// monotonic `now` (ns); an admitted connection holds a slot from now on, and an evicted one
    /// no longer does.
    mutating func admit(_ id: UInt64, source: String, known: Bool, now: UInt64) -> Decision {
        guard count(from: source) < limits.perSource else { return .refuse(.sourceFull) }
        let strangers = entries.values.reduce(0) { $0 + ($1.known ? 0 : 1) }
        let roomInTotal = entries.count < limits.total
        let roomForClass = known ? roomInTotal : roomInTotal && strangers < limits.total - limits.reservedForKnown
        var victim: UInt64?
        if !roomForClass {
            guard let oldest = oldestEvictableStranger(now: now) else { return .refuse(.full) }
            victim = oldest
            entries.removeValue(forKey: oldest)
            evicted &+= 1
        }
        entries[id] = Entry(source: source, known: known, admittedAt: now)
        return .admit(evicting: victim)
    }

    /// `id` passed its first message: it is never evicted from now on.
    mutating func engage(_ id: UInt64) {
        entries[id]?.engaged = true
    }

    /// `id` authenticated or closed: its slot is free.
    mutating func release(_ id: UInt64) {
        entries.removeValue(forKey: id)
    }

    /// The oldest stranger still waiting for its first message, if it has waited `evictionAge`.
    private func oldestEvictableStranger(now: UInt64) -> UInt64? {
        var best: (id: UInt64, at: UInt64)?
        for (id, entry) in entries where !entry.known && !entry.engaged {
            guard now >= entry.admittedAt, now - entry.admittedAt >= limits.evictionAge else { continue }
            if let current = best, (current.at, current.id) <= (entry.admittedAt, id) { continue }
            best = (id, entry.admittedAt)
        }
        return best?.id
    }
}
