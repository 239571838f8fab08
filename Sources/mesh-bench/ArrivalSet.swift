/// Which of a probe's numbered items (0 ..< count) have arrived: the first arrival of each counts,
/// a later one is a copy. The probes keep one under their lock with their own figures beside it.
struct ArrivalSet {
    private var seen: [Bool]
    /// Items seen at least once.
    private(set) var distinct = 0

    init(count: Int) { seen = [Bool](repeating: false, count: count) }

    /// Items numbered.
    var count: Int { seen.count }
    /// Items never seen.
    var missing: Int { seen.count - distinct }
    /// Every item seen.
    var isComplete: Bool { distinct == seen.count }

    /// Records an arrival of item `index`; true when it is the first.
    mutating func arrive(_ index: Int) -> Bool {
        guard !seen[index] else { return false }
        seen[index] = true
        distinct += 1
        return true
    }
}
