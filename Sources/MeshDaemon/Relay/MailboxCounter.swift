/// The counters a device puts on the mailbox boxes it seals to one peer (``MailboxSeal``):
/// strictly increasing, taken from the wall clock so they keep increasing across restarts
/// without being stored.
///
/// Each counter is the wall-clock time in nanoseconds, or one more than the last counter when
/// the clock has not moved past it (two boxes in one nanosecond, or a clock set back). A clock
/// set back across a restart makes the peer refuse the new boxes as too old until the clock
/// passes the old counters again; the items are kept and sent again meanwhile.
struct MailboxCounter: Sendable, Equatable {
    /// The last counter handed out (0 before the first).
    private(set) var last: UInt64 = 0

    /// The next counter at `wallNanoseconds` (a ``MeshClock`` reading).
    mutating func next(wallNanoseconds: Int64) -> UInt64 {
        let clock = UInt64(clamping: max(wallNanoseconds, 0))
        last = max(clock, last == .max ? last : last + 1)
        return last
    }
}
