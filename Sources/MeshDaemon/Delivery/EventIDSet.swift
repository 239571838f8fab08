import Foundation

/// A set of event IDs (UUIDs) for the dedup paths every received item goes through: an
/// open-addressed table of 16-byte slots with linear probing, at most half full.
///
/// `Set<UUID>` costs a SipHash run through the generic `Hasher` per lookup and touches two
/// places per probe (its occupancy bitmap and the element); at 60 000 realtime items/s the
/// receiving daemon's lookups and inserts there took ≈ 20 % of its CPU. Here a lookup is one
/// keyed 64 × 64-bit multiply and, mostly, one cache line. Keyed per process (a random key), so
/// a peer cannot choose event IDs that collide. An all-zero ID, which marks an empty slot, is
/// kept in a flag of its own. Removal shifts the following run back (no tombstones), so a table
/// that inserts and removes forever never degrades.
struct EventIDSet: Sendable {
    private struct Slot: Sendable, Equatable {
        var low: UInt64
        var high: UInt64
        static let empty = Slot(low: 0, high: 0)
    }

    /// The per-process hash key.
    private static let key: (UInt64, UInt64) = {
        var generator = SystemRandomNumberGenerator()
        return (generator.next() | 1, generator.next())
    }()

    private var slots: [Slot]
    private var containsZero = false
    /// IDs held.
    private(set) var count = 0

    /// An empty set that holds `minimumCapacity` IDs before it grows.
    init(minimumCapacity: Int = 0) {
        slots = Array(repeating: .empty, count: Self.slotCount(for: minimumCapacity))
    }

    /// Bytes the table takes (16 per slot).
    var tableBytes: Int { slots.count * MemoryLayout<Slot>.stride }

    func contains(_ eventID: UUID) -> Bool {
        let slot = Self.slot(eventID)
        if slot == .empty { return containsZero }
        return slots.withUnsafeBufferPointer { Self.probe(slot, in: $0).found }
    }

    /// Adds `eventID`; false when it was already there.
    @discardableResult
    mutating func insert(_ eventID: UUID) -> Bool {
        let slot = Self.slot(eventID)
        if slot == .empty {
            guard !containsZero else { return false }
            containsZero = true
            count += 1
            return true
        }
        if 2 * (count + 1) > slots.count { grow() }
        let inserted = slots.withUnsafeMutableBufferPointer { table in
            let (index, found) = Self.probe(slot, in: UnsafeBufferPointer(table))
            if !found { table[index] = slot }
            return !found
        }
        if inserted { count += 1 }
        return inserted
    }

    /// Removes `eventID`; false when it was not there.
    @discardableResult
    mutating func remove(_ eventID: UUID) -> Bool {
        let slot = Self.slot(eventID)
        if slot == .empty {
            guard containsZero else { return false }
            containsZero = false
            count -= 1
            return true
        }
        let removed = slots.withUnsafeMutableBufferPointer { table in
            let (start, found) = Self.probe(slot, in: UnsafeBufferPointer(table))
            guard found else { return false }
            var hole = start
            // Backward-shift deletion: move each later entry of the run into the hole when its
            // home slot does not lie (cyclically) between the hole and where it sits.
            let mask = table.count - 1
            var next = (hole + 1) & mask
            while table[next] != .empty {
                let home = Self.index(table[next], mask: mask)
                if (next &- home) & mask >= (next &- hole) & mask {
                    table[hole] = table[next]
                    hole = next
                }
                next = (next + 1) & mask
            }
            table[hole] = .empty
            return true
        }
        if removed { count -= 1 }
        return removed
    }

    private mutating func grow() {
        let old = slots
        slots = Array(repeating: .empty, count: old.count * 2)
        slots.withUnsafeMutableBufferPointer { table in
            for slot in old where slot != .empty {
                table[Self.probe(slot, in: UnsafeBufferPointer(table)).index] = slot
            }
        }
    }

    /// Where `slot` is in `table` (`found`), or the empty slot that ends its run, where it
    /// would go. The table is never full (at most half), so the walk ends.
    private static func probe(_ slot: Slot, in table: UnsafeBufferPointer<Slot>) -> (index: Int, found: Bool) {
        let mask = table.count - 1
        var index = index(slot, mask: mask)
        while true {
            let probe = table[index]
            if probe == slot { return (index, true) }
            if probe == .empty { return (index, false) }
            index = (index + 1) & mask
        }
    }

    private static func slotCount(for capacity: Int) -> Int {
        var slots = 16
        while slots < 2 * max(0, capacity) { slots *= 2 }
        return slots
    }

    private static func slot(_ eventID: UUID) -> Slot {
        withUnsafeBytes(of: eventID.uuid) { raw in
            Slot(low: raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self), high: raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
        }
    }

    /// The home slot: the folded 128-bit product of the keyed halves (wyhash's mix).
    private static func index(_ slot: Slot, mask: Int) -> Int {
        let product = (slot.low ^ key.0).multipliedFullWidth(by: slot.high ^ key.1)
        return Int(truncatingIfNeeded: product.high ^ product.low) & mask
    }
}
