import Foundation
import Testing
@testable import MeshDaemon

/// The realtime dedup memory: every one of the last `generation` IDs is recognised, whatever
/// came before; nothing older than twice that is held; an ID is remembered once.
@Suite("Recent realtime event IDs")
struct RecentEventIDsTests {
    @Test func theLastGenerationIsAlwaysRememberedAndMemoryStaysWithinTwice() {
        let generation = 64
        var recent = RecentEventIDs(generation: generation)
        var inserted: [UUID] = []
        for step in 0..<1_000 {
            let id = UUID()
            let added = recent.insert(id)
            #expect(added)
            inserted.append(id)
            let window = inserted.suffix(generation)
            #expect(window.allSatisfy { recent.contains($0) }, "step \(step): one of the last \(generation) was forgotten")
            #expect(recent.count <= 2 * generation)
            #expect(recent.count >= min(inserted.count, generation))
        }
        // Long gone: the first IDs are forgotten.
        #expect(!inserted.prefix(100).contains { recent.contains($0) })
        #expect(!recent.contains(UUID()))
    }

    @Test func anIDIsRememberedOnceInEitherGeneration() {
        var recent = RecentEventIDs(generation: 4)
        let first = UUID()
        let added = recent.insert(first), again = recent.insert(first)
        #expect(added && !again)
        // `first` moves to the previous generation with the next three; still a duplicate there.
        for _ in 0..<3 { recent.insert(UUID()) }
        #expect(recent.contains(first))
        let later = recent.insert(first)
        #expect(!later)
        #expect(recent.count == 4)
    }

    /// An idle daemon does not hold a table sized for a busy one (the router's generation is
    /// 65 536 IDs, a 2 MiB table): memory follows what was inserted.
    @Test func memoryFollowsTheIDsInsertedNotTheGeneration() {
        var recent = RecentEventIDs(generation: 65_536)
        #expect(recent.tableBytes <= 1024)
        for _ in 0..<100 { recent.insert(UUID()) }
        #expect(recent.tableBytes <= 8 * 1024)
        for _ in 0..<10_000 { recent.insert(UUID()) }
        #expect(recent.tableBytes <= 1024 * 1024)
    }
}
