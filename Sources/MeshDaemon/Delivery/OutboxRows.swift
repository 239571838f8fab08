import Foundation
import MeshCore

/// The outbox rows of the reliable path as the router reads and changes them: the pump's reads
/// (and which rows the store had to repair), the delete of acknowledged rows, a row queued for
/// a peer unpaired meanwhile, and `meshctl queue` (the listing with this run's attempts added,
/// a cancel).
///
/// - Acknowledged rows are deleted in the group committer's next transaction (sharing an fsync
///   with the sends committed then); once the committer is shut down (the router stops), on
///   the store worker instead, so an ack that arrives then still deletes.
/// - A cancel that removes nothing (no such id, or `permits` refuses its feature) is
///   `not-found`; store failures are `MeshError.store`.
///
/// Holds the store, its worker and the committer, no router state (the router keeps which
/// peer is paired and each peer's `ReliableOutbox`). Its calls suspend on the caller's
/// executor (`nonisolated(nonsending)`, as `StoreWorker.run`): from the router, no hop.
struct OutboxRows: Sendable {
    let store: DeliveryStore
    let worker: StoreWorker
    let committer: StoreGroupCommitter

    /// The peer's rows after sequence `after`, at most `limit`, in sequence order, and the ids
    /// of those whose event or session id the store found damaged and replaced.
    nonisolated(nonsending) func pending(peer: String, after: UInt64,
                                         limit: Int) async throws -> (entries: [OutboxEntry], repaired: [Int64]) {
        let store = self.store
        let entries = try await worker.run { try store.outbox.pending(peer: peer, after: after, limit: limit) }
        return (entries, Self.repaired(entries))
    }

    /// The ids of the rows the store repaired (see `OutboxEntry.repairedID`), in order.
    static func repaired(_ entries: [OutboxEntry]) -> [Int64] {
        entries.filter(\.repairedID).map(\.id.rawValue)
    }

    /// Deletes the peer's rows up to `upTo` (the peer acknowledged them).
    nonisolated(nonsending) func acknowledge(peer: String, upTo: UInt64) async throws {
        do {
            _ = try await committer.acknowledgeOutbox(peer: peer, upTo: upTo)
        } catch let error as StoreError where error.code == .closed {
            let store = self.store
            _ = try await worker.run { try store.outbox.acknowledge(peer: peer, upTo: upTo) }
        }
    }

    /// Deletes one row (queued for a peer that was unpaired while the commit ran).
    nonisolated(nonsending) func drop(_ id: OutboxID) async throws {
        let store = self.store
        _ = try await worker.run { try store.outbox.cancel(id: id) }
    }

    /// Every outstanding row, for `meshctl queue`.
    nonisolated(nonsending) func list() async throws -> [OutboxSummary] {
        let store = self.store
        return try await worker.call { try store.outbox.list() }
    }

    /// `items` as `meshctl queue` shows them at the wall time `now`: the stored attempts plus
    /// `live` ones of this run (by peer key and sequence), and the age in seconds.
    static func listing(_ items: [OutboxSummary], now: Date, live: (String, UInt64) -> Int)
        -> [(summary: OutboxSummary, attempts: Int, ageSeconds: Double)] {
        items.map { ($0, $0.attempts + live($0.peer, $0.sequence), $0.age(at: now)) }
    }

    /// Cancels the row `id`; `not-found` when none is queued or `permits` refuses its feature.
    nonisolated(nonsending) func cancel(id: Int64, permitting permits: (@Sendable (String) -> Bool)?) async throws {
        let store = self.store
        let removed = try await worker.call { try store.outbox.cancel(id: OutboxID(rawValue: id), permitting: permits) }
        guard removed else { throw MeshError.notFound("no queued item has id \(id); see `meshctl queue`") }
    }
}
