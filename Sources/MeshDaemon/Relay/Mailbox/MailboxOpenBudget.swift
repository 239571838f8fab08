/// How many boxes of one peer the mailbox may try to open: a token bucket, so a broker that
/// floods the peer's mailbox topic with fresh-looking boxes costs a bounded amount of
/// decryption per second.
///
/// Starts full, so the backlog the broker kept while the device was off (Mosquitto's default
/// `max_queued_messages` is 1000) opens at once; after that ``ratePerSecond`` boxes a second.
/// A box refused here is dropped (and counted): its items stay in the sender's outbox, which
/// posts them again.
struct MailboxOpenBudget: Sendable, Equatable {
    /// Boxes that may be opened in one burst.
    static let burst: Double = 2_000
    /// Boxes a second once the burst is spent.
    static let ratePerSecond: Double = 200

    private var tokens: Double = Self.burst
    private var last: UInt64?

    /// Takes one token at monotonic `now` (ns); false when none is left.
    mutating func take(now: UInt64) -> Bool {
        if let last, now > last {
            tokens = min(Self.burst, tokens + Double(now - last) / 1e9 * Self.ratePerSecond)
        }
        last = max(last ?? now, now)
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }
}
