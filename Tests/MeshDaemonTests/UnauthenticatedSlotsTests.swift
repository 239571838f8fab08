import Testing
@testable import MeshDaemon

/// The admission rules for unauthenticated connections, on virtual time (nanoseconds).
@Suite("Unauthenticated connection slots")
struct UnauthenticatedSlotsTests {
    static let ms: UInt64 = 1_000_000

    @Test("one source holds at most perSource slots; other sources are not affected")
    func perSourceCap() {
        var slots = UnauthenticatedSlots()
        for id in 1...4 as ClosedRange<UInt64> {
            #expect(slots.admit(id, source: "10.0.0.9", known: false, now: 0) == .admit(evicting: nil))
        }
        #expect(slots.admit(5, source: "10.0.0.9", known: false, now: 0) == .refuse(.sourceFull))
        #expect(slots.admit(6, source: "10.0.0.7", known: false, now: 0) == .admit(evicting: nil))
        #expect(slots.count(from: "10.0.0.9") == 4)
        // A freed slot can be taken again by the same source.
        slots.release(2)
        #expect(slots.admit(7, source: "10.0.0.9", known: false, now: 0) == .admit(evicting: nil))
        #expect(slots.count == 5)
    }

    @Test("strangers never take the slots reserved for addresses of paired devices")
    func reservedSlots() {
        var slots = UnauthenticatedSlots()
        // 12 stranger sources × 4 = 48 slots = total − reserved; all fresh (not evictable yet).
        var id: UInt64 = 0
        for host in 1...12 {
            for _ in 0..<4 {
                id += 1
                #expect(slots.admit(id, source: "10.0.1.\(host)", known: false, now: 0) == .admit(evicting: nil))
            }
        }
        #expect(slots.admit(1000, source: "10.0.1.99", known: false, now: 10 * Self.ms) == .refuse(.full))
        // A paired device's address still gets in, up to the total.
        for n in 0..<4 {
            #expect(slots.admit(2000 + UInt64(n), source: "10.0.2.1", known: true, now: 10 * Self.ms) == .admit(evicting: nil))
        }
        #expect(slots.count == 52)
    }

    @Test("a newcomer evicts the oldest idle stranger once it waited the eviction age, never a young or engaged one")
    func eviction() {
        var slots = UnauthenticatedSlots(limits: .init(total: 4, perSource: 4, reservedForKnown: 1, evictionAge: 250 * Self.ms))
        #expect(slots.admit(1, source: "a", known: false, now: 0) == .admit(evicting: nil))
        #expect(slots.admit(2, source: "a", known: false, now: 10 * Self.ms) == .admit(evicting: nil))
        #expect(slots.admit(3, source: "b", known: false, now: 20 * Self.ms) == .admit(evicting: nil))
        // Strangers' share (3) is full and nobody waited 250 ms yet.
        #expect(slots.admit(4, source: "c", known: false, now: 100 * Self.ms) == .refuse(.full))
        // Connection 1 passed its first message: it is engaged and never evicted.
        slots.engage(1)
        #expect(slots.admit(5, source: "c", known: false, now: 260 * Self.ms) == .admit(evicting: 2))
        #expect(!slots.contains(2))
        // Connection 3 waited 245 ms: not yet.
        #expect(slots.admit(6, source: "d", known: false, now: 265 * Self.ms) == .refuse(.full))
        #expect(slots.admit(6, source: "d", known: false, now: 280 * Self.ms) == .admit(evicting: 3))
        // Left: 1 (engaged), 5 and 6 (young): nothing evictable.
        #expect(slots.admit(7, source: "e", known: false, now: 290 * Self.ms) == .refuse(.full))
        #expect(slots.evicted == 2)
        // The reserved slot is still there for a paired device's address.
        #expect(slots.admit(8, source: "k", known: true, now: 290 * Self.ms) == .admit(evicting: nil))
        // With every slot taken, a paired device's address evicts an old stranger too.
        #expect(slots.admit(9, source: "k", known: true, now: 600 * Self.ms) == .admit(evicting: 5))
        #expect(slots.isEngaged(1))
    }

    @Test("a flood of idle connections from many rotating sources cannot keep a newcomer out for longer than the eviction age")
    func rotatingFlood() {
        var slots = UnauthenticatedSlots()
        let step = 2 * Self.ms           // 500 new connections a second, each from a new address
        var now: UInt64 = 0
        var id: UInt64 = 0
        var open = 0
        for n in 0..<2000 {
            now += step
            id += 1
            if case .admit = slots.admit(id, source: "2001:db8::\(n)", known: false, now: now) { open += 1 }
        }
        #expect(slots.count <= 48)
        // A joiner arriving now gets a slot (an old idle one is evicted for it)…
        let joiner = id + 1
        guard case .admit(let victim) = slots.admit(joiner, source: "192.0.2.50", known: false, now: now) else {
            Issue.record("the joiner was refused")
            return
        }
        #expect(victim != nil)
        // …its first message engages it, and the flood goes on without evicting it.
        slots.engage(joiner)
        for n in 0..<2000 {
            now += step
            id += 1
            _ = slots.admit(id + 10_000, source: "2001:db8:1::\(n)", known: false, now: now)
        }
        #expect(slots.contains(joiner))
        #expect(open > 48)
    }

    @Test("limits out of range are clamped to something that works")
    func clamped() {
        var slots = UnauthenticatedSlots(limits: .init(total: 0, perSource: 0, reservedForKnown: 10, evictionAge: 0))
        #expect(slots.limits.total == 1 && slots.limits.perSource == 1 && slots.limits.reservedForKnown == 0)
        #expect(slots.admit(1, source: "a", known: false, now: 5) == .admit(evicting: nil))
        #expect(slots.admit(2, source: "b", known: false, now: 5) == .admit(evicting: 1))
    }
}
