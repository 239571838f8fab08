/// A sliding anti-replay window over 64-bit counters (RFC 6479): a ring of 64-bit words.
///
/// Accepts each counter at most once, accepts reordering up to ``windowSize`` behind the
/// highest counter seen, and rejects anything older. ``check(_:)`` does not change the window;
/// ``accept(_:)`` does, and is only called after the packet authenticated, so forged packets
/// cannot move the window.
struct ReplayWindow: Sendable {
    /// The ring holds this many 64-bit words.
    static let wordCount = 64
    /// How far behind the highest counter a packet may arrive: (words − 1) × 64 = 4032.
    static let windowSize = UInt64((wordCount - 1) * 64)

    enum Verdict: Equatable { case fresh, duplicate, tooOld }

    private var ring = [UInt64](repeating: 0, count: wordCount)
    private(set) var highest: UInt64 = 0

    /// Whether `counter` may be accepted, without changing the window.
    func check(_ counter: UInt64) -> Verdict {
        if counter > highest { return .fresh }
        // The ring covers the blocks of highest − windowSize … highest, so that is the bound.
        if highest - counter > Self.windowSize { return .tooOld }
        let word = Int((counter >> 6) % UInt64(Self.wordCount))
        return ring[word] & (1 << (counter & 63)) != 0 ? .duplicate : .fresh
    }

    /// Records `counter` as seen, sliding the window forward when it is the new highest.
    /// Call only after ``check(_:)`` returned `.fresh` and the packet authenticated.
    mutating func accept(_ counter: UInt64) {
        let block = counter >> 6
        if counter > highest {
            let current = highest >> 6
            let distance = min(block - current, UInt64(Self.wordCount))
            var index: UInt64 = 1
            while index <= distance {
                ring[Int((current + index) % UInt64(Self.wordCount))] = 0
                index += 1
            }
            highest = counter
        }
        ring[Int(block % UInt64(Self.wordCount))] |= 1 << (counter & 63)
    }
}
