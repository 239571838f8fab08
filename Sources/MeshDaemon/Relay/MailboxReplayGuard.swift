/// The counters of one peer's mailbox boxes (``MailboxSeal``) this device took already, so a box
/// the broker keeps or replays is opened and handed on at most once.
///
/// Counters are the sender's and strictly increasing, but boxes may arrive out of order (the
/// broker holds items and acks on different topics, and retries). The guard keeps the
/// ``capacity`` highest counters it took and a floor below them: a counter at or below the
/// floor is too old, one in the set is a replay, any other is fresh. Taking a fresh one past
/// capacity raises the floor to the lowest counter kept and forgets it. State is bounded
/// (`capacity` × 8 bytes per peer); a box refused as too old costs nothing lasting, because its
/// sender keeps the item until it is acked and seals it again, with a new counter, when it
/// resends.
struct MailboxReplayGuard: Sendable, Equatable {
    /// How many taken counters are kept above the floor.
    static let capacity = 1024

    /// What ``check(_:)`` says of a counter.
    enum Verdict: Sendable, Equatable {
        /// Not taken yet: open the box, then ``accept(_:)`` it if it opened.
        case fresh
        /// Taken already: drop the box.
        case replayed
        /// At or below the floor: drop the box (the sender will seal the item again).
        case tooOld
    }

    /// Counters at or below this are refused.
    private(set) var floor: UInt64
    /// Taken counters above ``floor``, ascending.
    private(set) var taken: [UInt64] = []

    /// A guard that refuses every counter up to `floor` (for example the wall-clock time, in
    /// nanoseconds, before which the receiver accepts no box after a restart).
    init(floor: UInt64 = 0) { self.floor = floor }

    /// Whether `counter` may be taken; changes nothing, so it is asked before opening the box.
    func check(_ counter: UInt64) -> Verdict {
        if counter <= floor { return .tooOld }
        let index = insertionIndex(of: counter)
        return index < taken.count && taken[index] == counter ? .replayed : .fresh
    }

    /// Records `counter` as taken. Call only after ``check(_:)`` said `.fresh` and the box opened,
    /// so a forged box cannot use up a counter.
    mutating func accept(_ counter: UInt64) {
        guard check(counter) == .fresh else { return }
        taken.insert(counter, at: insertionIndex(of: counter))
        if taken.count > Self.capacity {
            floor = taken.removeFirst()
        }
    }

    /// Refuses every counter up to `newFloor` from now on (never lowers the floor).
    mutating func raiseFloor(to newFloor: UInt64) {
        guard newFloor > floor else { return }
        floor = newFloor
        taken.removeAll { $0 <= newFloor }
    }

    private func insertionIndex(of counter: UInt64) -> Int {
        var low = 0, high = taken.count
        while low < high {
            let middle = (low + high) / 2
            if taken[middle] < counter { low = middle + 1 } else { high = middle }
        }
        return low
    }
}
