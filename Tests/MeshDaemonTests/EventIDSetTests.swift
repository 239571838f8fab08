import Foundation
import Testing
@testable import MeshDaemon

/// `EventIDSet` against `Set<UUID>` as the reference, on seeded random operations.
@Suite("EventIDSet")
struct EventIDSetTests {
    static func uuid(_ a: UInt64, _ b: UInt64) -> UUID {
        var bytes = (UInt8(0), UInt8(0), UInt8(0), UInt8(0), UInt8(0), UInt8(0), UInt8(0), UInt8(0),
                     UInt8(0), UInt8(0), UInt8(0), UInt8(0), UInt8(0), UInt8(0), UInt8(0), UInt8(0))
        withUnsafeMutableBytes(of: &bytes) { raw in
            raw.storeBytes(of: a, toByteOffset: 0, as: UInt64.self)
            raw.storeBytes(of: b, toByteOffset: 8, as: UInt64.self)
        }
        return UUID(uuid: bytes)
    }

    @Test func randomInsertsRemovesAndLookupsAgreeWithSet() {
        var random = SeededGenerator(seed: SeededGenerator.seed(for: "EventIDSet random operations"))
        var set = EventIDSet()
        var reference = Set<UUID>()
        // A small pool, so inserts hit present IDs and removes hit absent ones often; the
        // all-zero ID and IDs sharing one half are in it (the empty-slot marker, clustered runs).
        var pool: [UUID] = [Self.uuid(0, 0), Self.uuid(0, 1), Self.uuid(1, 0)]
        for _ in 0..<3000 { pool.append(UUID()) }
        for index in 0..<500 { pool.append(Self.uuid(42, UInt64(index))) }
        for step in 0..<60_000 {
            let id = pool[Int(random.next() % UInt64(pool.count))]
            switch random.next() % 10 {
            case 0..<5:
                let inserted = set.insert(id), expected = reference.insert(id).inserted
                #expect(inserted == expected, "insert at step \(step)")
            case 5..<8:
                let removed = set.remove(id), expected = reference.remove(id) != nil
                #expect(removed == expected, "remove at step \(step)")
            default:
                #expect(set.contains(id) == reference.contains(id), "lookup at step \(step)")
            }
            #expect(set.count == reference.count)
            if set.count != reference.count { return }
        }
        for id in pool { #expect(set.contains(id) == reference.contains(id)) }
    }

    @Test func growsPastItsCapacityAndEmptiesForGood() {
        var set = EventIDSet(minimumCapacity: 4)
        let ids = (0..<10_000).map { _ in UUID() }
        let inserted = ids.filter { set.insert($0) }.count
        #expect(inserted == 10_000)
        #expect(set.count == 10_000)
        #expect(ids.allSatisfy { set.contains($0) })
        #expect(!set.contains(UUID()))
        let removed = ids.prefix(5_000).filter { set.remove($0) }.count
        #expect(removed == 5_000)
        #expect(set.count == 5_000)
        #expect(ids.prefix(5_000).allSatisfy { !set.contains($0) })
        #expect(ids.suffix(5_000).allSatisfy { set.contains($0) })
        let rest = ids.suffix(5_000).filter { set.remove($0) }.count
        #expect(rest == 5_000)
        #expect(set.count == 0 && !set.contains(ids[9_999]))
    }

    @Test func aCopyIsIndependent() {
        var set = EventIDSet()
        let first = UUID(), second = UUID()
        set.insert(first)
        var copy = set
        copy.insert(second)
        copy.remove(first)
        #expect(set.contains(first) && !set.contains(second) && set.count == 1)
        #expect(!copy.contains(first) && copy.contains(second) && copy.count == 1)
    }
}
