import Foundation

/// The realtime event IDs this daemon handed out lately, for dedup: remembers at least the
/// last `generation` IDs inserted and at most twice as many.
///
/// Two generations instead of one set with an eviction order: when the current generation
/// holds `generation` IDs it becomes the previous one and the previous one is dropped whole.
/// The single set this replaces removed the oldest ID on every insert once full; each removal
/// in Swift's open-addressed `Set` rehashes the neighbours it shifts, at random places of a
/// 2 MiB table — 7 % of the receiving daemon's CPU at 60 000 realtime messages/s. Both
/// generations are `EventIDSet`s.
struct RecentEventIDs: Sendable {
    let generation: Int
    /// Starts small and grows (an idle daemon keeps a few KiB here, not a 2 MiB table it never
    /// fills); each later generation starts with room for a whole one.
    private var current = EventIDSet()
    private var previous = EventIDSet()

    init(generation: Int) {
        self.generation = max(1, generation)
    }

    /// IDs held now (between the last `generation` inserted and twice as many).
    var count: Int { current.count + previous.count }

    /// Bytes both generations' tables take.
    var tableBytes: Int { current.tableBytes + previous.tableBytes }

    func contains(_ eventID: UUID) -> Bool {
        current.contains(eventID) || previous.contains(eventID)
    }

    /// Remembers `eventID`; false when it was already remembered.
    @discardableResult
    mutating func insert(_ eventID: UUID) -> Bool {
        guard !previous.contains(eventID), current.insert(eventID) else { return false }
        if current.count >= generation {
            // The old previous generation's storage is freed; the new current one starts with
            // room for a whole generation, so it never rehashes while it fills.
            previous = current
            current = EventIDSet(minimumCapacity: generation)
        }
        return true
    }
}
