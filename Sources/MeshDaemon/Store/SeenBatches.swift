import Foundation

/// A part of the seen-set stored as appended rows — `seen_batch`: event IDs that reached an app
/// live (``StoreInbox/recordSeen(from:eventIDs:lookUp:)``); `acked_batch`: event IDs of inbox items
/// that left the inbox (an app's ack, or an unpair) — one row per call and peer (16 bytes per ID,
/// in order), mirrored here in memory for lookups.
///
/// One appended row per transaction replaces one row plus two index entries per ID: the random
/// event IDs no longer scatter writes over an index at every commit. Bounded per peer by
/// ``DeliveryStoreOptions/dedupHorizonPerPeer``, each table on its own: the oldest IDs go first
/// (whole rows, or the front of the oldest row), in the transaction that adds. Guarded by the
/// store's lock; changed only after the transaction committed.
struct SeenBatches {
    /// The table of realtime IDs (schema v3).
    static let realtimeTable = "seen_batch"
    /// The table of acknowledged inbox IDs (schema v4).
    static let ackedTable = "acked_batch"

    /// One stored row.
    struct Row {
        var id: Int64
        var eventIDs: [UUID]
    }

    /// What one transaction did to the table, applied with ``apply(_:)`` once it committed.
    struct Change {
        var peer: String
        var inserted: Row?
        var deleted: [Int64] = []
        var trimmed: Row?
    }

    /// `realtimeTable` or `ackedTable`.
    let table: String
    private(set) var known = EventIDSet()
    /// Per peer, its rows oldest first.
    private(set) var rows: [String: [Row]] = [:]
    /// Per peer, how many IDs its rows hold.
    private(set) var countByPeer: [String: Int] = [:]

    /// IDs remembered over all peers.
    var count: Int { known.count }

    func contains(_ eventID: UUID) -> Bool { known.contains(eventID) }

    init(table: String) {
        self.table = table
    }

    /// Reads every row of `table` (at open).
    static func load(_ table: String, from db: SQLiteConnection) throws -> SeenBatches {
        var batches = SeenBatches(table: table)
        let rows = try db.query("SELECT id, peer, event_ids FROM \(table) ORDER BY id", [], "load seen-set \(table)") {
            ($0.text(1), Row(id: $0.int64(0), eventIDs: decode($0.blob(2))))
        }
        for (peer, row) in rows { batches.append(row, peer: peer) }
        return batches
    }

    /// `ids` as stored: 16 bytes each, in order.
    static func encode(_ ids: [UUID]) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(ids.count * 16)
        for id in ids { withUnsafeBytes(of: id.uuid) { bytes.append(contentsOf: $0) } }
        return bytes
    }

    /// The IDs of a stored blob (a trailing partial ID, which this code never writes, is ignored).
    static func decode(_ bytes: [UInt8]) -> [UUID] {
        var ids: [UUID] = []
        ids.reserveCapacity(bytes.count / 16)
        var offset = 0
        while offset + 16 <= bytes.count {
            let b = bytes[offset..<(offset + 16)]
            let i = b.startIndex
            ids.append(UUID(uuid: (b[i], b[i + 1], b[i + 2], b[i + 3], b[i + 4], b[i + 5], b[i + 6], b[i + 7],
                                   b[i + 8], b[i + 9], b[i + 10], b[i + 11], b[i + 12], b[i + 13], b[i + 14], b[i + 15])))
            offset += 16
        }
        return ids
    }

    /// Appends `fresh` (IDs known nowhere yet) for `peer` inside an open transaction and prunes
    /// that peer's oldest IDs beyond `horizon`. Returns the change to apply after the commit.
    func record(_ fresh: [UUID], peer: String, horizon: Int, db: SQLiteConnection, operation: String) throws -> Change {
        var change = Change(peer: peer)
        let horizon = max(0, horizon)
        let ids = fresh.count > horizon ? Array(fresh.suffix(horizon)) : fresh
        guard !ids.isEmpty else { return change }
        try db.run("INSERT INTO \(table) (peer, event_ids) VALUES (?, ?)", [.text(peer), .blob(Self.encode(ids))], operation)
        change.inserted = Row(id: db.lastInsertRowID, eventIDs: ids)
        var total = (countByPeer[peer] ?? 0) + ids.count
        for row in rows[peer] ?? [] {
            guard total > horizon else { break }
            if total - row.eventIDs.count >= horizon {
                try db.run("DELETE FROM \(table) WHERE id = ?", [.integer(row.id)], operation)
                change.deleted.append(row.id)
                total -= row.eventIDs.count
            } else {
                let kept = Array(row.eventIDs.suffix(row.eventIDs.count - (total - horizon)))
                try db.run("UPDATE \(table) SET event_ids = ? WHERE id = ?", [.blob(Self.encode(kept)), .integer(row.id)],
                           operation)
                change.trimmed = Row(id: row.id, eventIDs: kept)
                total = horizon
            }
        }
        return change
    }

    /// Mirrors a committed ``record(_:peer:horizon:db:operation:)``.
    ///
    /// The deleted rows are the peer's oldest and the trimmed one the oldest left, so both are
    /// changed in place at the front: a flush costs what it changes, not the peer's row count
    /// (a peer with sparse traffic has up to one row per ID, i.e. up to the horizon).
    mutating func apply(_ change: Change) {
        let peer = change.peer
        let deleted = Set(change.deleted)
        let count = rows[peer]?.count ?? 0
        var removed = 0
        while removed < count, let row = rows[peer]?[removed], deleted.contains(row.id) {
            for id in row.eventIDs { known.remove(id) }
            countByPeer[peer, default: 0] -= row.eventIDs.count
            removed += 1
        }
        if removed > 0 { rows[peer]?.removeFirst(removed) }
        if removed < deleted.count {
            // Not a prefix (never made by `record`): the general, linear path.
            for row in rows[peer] ?? [] where deleted.contains(row.id) {
                for id in row.eventIDs { known.remove(id) }
                countByPeer[peer, default: 0] -= row.eventIDs.count
            }
            rows[peer]?.removeAll { deleted.contains($0.id) }
        }
        if let trimmed = change.trimmed,
           let index = rows[peer]?.first?.id == trimmed.id ? 0 : rows[peer]?.firstIndex(where: { $0.id == trimmed.id }),
           let old = rows[peer]?[index] {
            let dropped = old.eventIDs.count - trimmed.eventIDs.count
            for id in old.eventIDs.prefix(max(0, dropped)) { known.remove(id) }
            countByPeer[peer, default: 0] -= dropped
            rows[peer]?[index] = trimmed
        }
        if let inserted = change.inserted { append(inserted, peer: peer) }
        if countByPeer[peer] == 0 {
            countByPeer[peer] = nil
            rows[peer] = nil
        }
    }

    private mutating func append(_ row: Row, peer: String) {
        rows[peer, default: []].append(row)
        countByPeer[peer, default: 0] += row.eventIDs.count
        for id in row.eventIDs { known.insert(id) }
    }
}
