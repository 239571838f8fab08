/// A sink whose inbox hand-out could not be recorded in the store (`StoreInbox.markDelivered` failed, as on
/// a full disk). Inbox items are not handed to it without that record (an app that dies before
/// acking must get them flagged as redeliveries), and handing later items first would break
/// per-peer order; so it gets no inbox item until a replay, tried again with backoff from the
/// router's tick (`AppHandOut.startDueRetries`), hands it what it misses from the store, in order.
struct HandOutRetry: Sendable {
    /// Failed attempts in a row (the backoff's exponent).
    var failures = 0
    /// Monotonic instant (ns) of the next replay; nil while one runs.
    var dueAt: UInt64?
    /// When the sink's retries began, among all sinks (a counter): due retries start in this order.
    var order: UInt64 = 0

    /// Backoff after the latest failure: 250 ms doubling, at most `maximum` seconds.
    func delay(maximum: Double) -> Double {
        min(maximum, 0.25 * Double(1 << min(max(failures - 1, 0), 16)))
    }
}

