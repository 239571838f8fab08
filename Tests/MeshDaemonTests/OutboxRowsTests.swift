import Foundation
import MeshCore
import Testing
@testable import MeshDaemon

/// The outbox rows as the router reads and changes them (`OutboxRows`), over a real store in a
/// temporary folder with an inline worker: no router, loop or socket.
@Suite("Outbox rows")
struct OutboxRowsTests {
    static func withRows(_ body: (OutboxRows, DeliveryStore) async throws -> Void) async throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        let store = try DeliveryStore.open(path: dir.path())
        defer { store.close() }
        let committer = StoreGroupCommitter(store: store)
        defer { committer.shutdown() }
        try await body(OutboxRows(store: store, worker: StoreWorker(inline: true), committer: committer), store)
    }

    @Test func thePumpReadsAfterASequenceAndAnAckDeletesUpToIt() async throws {
        try await Self.withRows { rows, store in
            _ = try store.outbox.enqueue(peer: "A", items: (0..<6).map { makeOutboxItem($0) })
            let page = try await rows.pending(peer: "A", after: 2, limit: 2)
            #expect(page.entries.map(\.sequence) == [3, 4] && page.repaired.isEmpty)
            try await rows.acknowledge(peer: "A", upTo: 4)
            #expect(try store.outbox.pending(peer: "A").map(\.sequence) == [5, 6])
        }
    }

    @Test func anAckAfterTheCommitterStoppedStillDeletes() async throws {
        try await Self.withRows { rows, store in
            _ = try store.outbox.enqueue(peer: "A", items: (0..<3).map { makeOutboxItem($0) })
            rows.committer.shutdown()
            try await rows.acknowledge(peer: "A", upTo: 2)
            #expect(try store.outbox.pending(peer: "A").map(\.sequence) == [3], "deleted on the worker instead")
        }
    }

    @Test func aCancelOfNothingIsNotFoundAndARefusedFeatureStaysQueued() async throws {
        try await Self.withRows { rows, store in
            let receipt = try store.outbox.enqueue(peer: "A", item: makeOutboxItem(1, feature: "secret"))
            await #expect(throws: MeshError.self) { try await rows.cancel(id: 999, permitting: nil) }
            do {
                try await rows.cancel(id: receipt.id.rawValue, permitting: { $0 == "demo" })
                Issue.record("a refused feature must not be cancelled")
            } catch let error as MeshError {
                #expect(error.kind == .notFound)
            }
            #expect(try await rows.list().map(\.id) == [receipt.id], "still queued")
            try await rows.cancel(id: receipt.id.rawValue, permitting: { $0 == "secret" })
            #expect(try await rows.list().isEmpty)
            try await rows.drop(receipt.id)
        }
    }

    @Test func theListingAddsThisRunsAttemptsAndTheAge() {
        let created = Date(timeIntervalSince1970: 1_000)
        func summary(_ peer: String, _ sequence: UInt64, attempts: Int) -> OutboxSummary {
            OutboxSummary(id: OutboxID(rawValue: Int64(sequence)), peer: peer, sequence: sequence, eventID: UUID(),
                          featureID: "demo", sessionID: nil, kind: 2, size: 10, createdAt: created, attempts: attempts,
                          lastAttemptAt: nil)
        }
        let listed = OutboxRows.listing([summary("A", 1, attempts: 2), summary("B", 7, attempts: 0)],
                                        now: created.addingTimeInterval(30)) { peer, sequence in
            peer == "A" && sequence == 1 ? 3 : 0
        }
        #expect(listed.map(\.attempts) == [5, 0])
        #expect(listed.map(\.ageSeconds) == [30, 30])
        #expect(OutboxRows.listing([summary("A", 1, attempts: 0)], now: created.addingTimeInterval(-5)) { _, _ in 0 }
            .first?.ageSeconds == 0, "a clock before the row's creation gives age 0")
    }
}
