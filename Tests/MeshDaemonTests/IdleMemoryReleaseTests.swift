import Foundation
import Testing
@testable import MeshDaemon

@Suite("Memory given back after a burst")
struct IdleMemoryReleaseTests {
    @Test func releasesOnceAfterAQuietSpellThatFollowsTraffic() {
        var idle = IdleMemoryRelease(quietTicks: 3)
        func ticks(_ fingerprints: [UInt64]) -> [Int] {
            fingerprints.indices.filter { idle.tick(fingerprint: fingerprints[$0]) }
        }
        // A daemon that never had traffic has nothing to give back.
        #expect(ticks(Array(repeating: 0, count: 10)).isEmpty)
        // Traffic, then quiet: released on the third quiet tick, and only once.
        #expect(ticks([5, 9, 9, 9, 9] + Array(repeating: 9, count: 10)) == [4])
        // Traffic that pauses for less than the spell keeps it waiting.
        #expect(ticks([10, 10, 11, 11, 11, 11, 11]) == [5])
    }

    @Test func theStoreGivesItsPageCacheBackAndKeepsEverything() throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        let store = try DeliveryStore.open(path: dir.path())
        for chunk in 0..<20 {
            _ = try store.outbox.enqueue(peer: "A", items: (0..<200).map { makeOutboxItem(chunk * 200 + $0, size: 1_000) })
        }
        #expect(try store.outbox.pending(peer: "A", limit: 10_000).count == 4_000)
        let full = store.pageCacheBytes()
        #expect(full > 2 << 20, "4 000 items of 1 kB read back fill the page cache: \(full) bytes")

        store.releaseMemory()
        let released = store.pageCacheBytes()
        #expect(released < full / 4, "page cache \(full) → \(released) bytes")

        // Nothing is lost and the store goes on working.
        #expect(try store.outbox.pending(peer: "A", limit: 10_000).map { payloadIndex($0.item.payload) } == Array(0..<4_000))
        #expect(try store.outbox.enqueue(peer: "A", item: makeOutboxItem(4_000)).sequence == 4_001)
        #expect(try store.integrityCheck() == ["ok"])
        store.close()
        store.releaseMemory()    // closed: nothing to do, no crash
    }
}
