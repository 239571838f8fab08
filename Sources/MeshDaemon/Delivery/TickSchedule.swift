import NIOCore

/// When the router's tick runs and what it does on which round: every 100 ms (on the loop's
/// clock: virtual time in the simulator), link estimates, lease expiry, reliable retries and
/// the seen-set flush; every third of the presence lease, presence renewal to active peers.
struct TickSchedule: Sendable, Equatable {
    /// Between two ticks.
    static let interval = TimeAmount.milliseconds(100)

    /// Rounds between two presence renewals (at least 1).
    let renewEvery: UInt64
    /// The rounds started so far.
    private(set) var round: UInt64 = 0

    /// `presenceLease`: seconds a peer's presence announcement holds.
    init(presenceLease: Double) {
        let rounds = (presenceLease / 3) * 10
        renewEvery = rounds.isFinite && rounds < 1e18 ? UInt64(max(1, rounds)) : UInt64(1e18)
    }

    /// Starts the next round; returns its number (from 1).
    mutating func next() -> UInt64 {
        round &+= 1
        return round
    }

    /// Whether round `round` renews this device's presence at the active peers.
    func renewsPresence(_ round: UInt64) -> Bool { round % renewEvery == 0 }
}
