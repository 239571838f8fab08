/// A peer counts as reachable while its lease, renewed by every authenticated packet, lasts.
///
/// Kept apart from the channel state on purpose (docs/ARCHITECTURE.md §5, docs/DELIVERY.md "Presence and watermarks"): a channel may be active on
/// the stream path while datagrams have stopped arriving, and that is worth seeing.
struct ReachabilityLease: Sendable, Equatable {
    /// Lease length, nanoseconds.
    var duration: UInt64
    /// Monotonic instant the lease ends; nil before any renewal.
    private(set) var expiresAt: UInt64?
    /// Monotonic instant of the latest renewal (the peer's last authenticated packet); kept
    /// when the lease is revoked, so `meshctl peers` can say when a departed peer was last seen.
    private(set) var lastRenewedAt: UInt64?

    /// Creates a lease of `seconds`.
    init(seconds: Double) { duration = Nanoseconds.from(seconds: seconds) }

    /// Renews the lease at monotonic time `now`.
    mutating func renew(now: UInt64) {
        expiresAt = max(expiresAt ?? 0, now &+ duration)
        lastRenewedAt = max(lastRenewedAt ?? 0, now)
    }

    /// Ends the lease (channel closed).
    mutating func revoke() { expiresAt = nil }

    /// Whether the lease is running at `now`.
    func isValid(now: UInt64) -> Bool { expiresAt.map { now < $0 } ?? false }
}
