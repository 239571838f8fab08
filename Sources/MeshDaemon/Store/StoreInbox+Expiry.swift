import Foundation

/// Expiry of inbox items no app ever took.
extension StoreInbox {
    /// Deletes, in one transaction, at most `limit` inbox items received before
    /// `receivedBefore` that were never handed to an app (`delivery_count` 0: no app of their
    /// feature attached since they arrived) and whose feature `keep` does not accept (the
    /// features attached now). Their event IDs are remembered as an ack's are, so a resend is a
    /// duplicate. Returns the deleted items' features, one entry per item. Reads the inbox once
    /// (it is bounded by `inbox_max_items`).
    public func expire(receivedBefore: Date, keeping keep: (String) -> Bool, limit: Int = 10_000) throws -> [String] {
        try store.withConnectionFreeingSpace { db in
            let operation = "expire inbox items no app took"
            let candidates = try db.query("""
                SELECT id, peer, event_id, feature, LENGTH(payload) FROM inbox
                WHERE delivery_count = 0 AND received_at < ? ORDER BY id LIMIT ?
                """, [StoreColumns.value(receivedBefore), .integer(Int64(max(0, limit)))], operation) {
                (id: $0.int64(0), peer: $0.text(1), eventID: StoreColumns.validUUID($0, 2), feature: $0.text(3),
                 size: Int($0.int64(4)))
            }.filter { !keep($0.feature) }
            guard !candidates.isEmpty else { return [] }
            let changes = try db.transaction(operation) {
                for candidate in candidates {
                    try db.run("DELETE FROM inbox WHERE id = ?", [.integer(candidate.id)], operation)
                }
                return try rememberLeft(candidates.map { ($0.peer, $0.eventID) }, db: db, operation: operation)
            }
            for change in changes { store.ackedBatches.apply(change) }
            for candidate in candidates {
                let one = QueueTally(items: 1, bytes: candidate.size)
                store.tallies.inbox = store.tallies.inbox - one
                store.tallies.addInbox(peer: candidate.peer, QueueTally() - one)
            }
            return candidates.map(\.feature)
        }
    }
}

/// One inbox item as `meshctl queue --inbox` lists it.
public struct InboxSummary: Sendable, Equatable {
    /// Its inbox id (what `inbox.ack` takes).
    public var id: InboxID
    /// The peer it came from.
    public var peer: String
    /// Its feature.
    public var featureID: String
    /// Its event ID (the all-zero ID for a damaged one).
    public var eventID: UUID
    /// Seconds since it arrived (at the time given to ``StoreInbox/list(limit:at:)``).
    public var ageSeconds: Double
    /// How often it was handed to an app.
    public var deliveries: Int
    /// Payload bytes.
    public var size: Int
}

extension StoreInbox {
    /// The oldest `limit` inbox items, in arrival order, without their payloads.
    public func list(limit: Int, at now: Date) throws -> [InboxSummary] {
        try store.withConnection { db in
            try db.query("""
                SELECT id, peer, event_id, feature, received_at, delivery_count, LENGTH(payload) FROM inbox ORDER BY id LIMIT ?
                """, [.integer(Int64(max(0, limit)))], "list inbox items") { row in
                InboxSummary(id: InboxID(rawValue: row.int64(0)), peer: row.text(1), featureID: row.text(3),
                             eventID: StoreColumns.validUUID(row, 2) ?? StoreColumns.damagedID,
                             ageSeconds: max(0, now.timeIntervalSince(StoreColumns.date(row, 4))),
                             deliveries: Int(clamping: row.int64(5)), size: Int(row.int64(6)))
            }
        }
    }
}
