import Foundation

/// The latest-state slots of a ``DeliveryStore`` (`store.slots`): outbound per (feature,
/// session), inbound per (peer, feature, session). A put only replaces a slot when its revision
/// is strictly higher than the stored one.
///
/// A view of the store: it runs on the store's connection under the store's lock.
public struct StoreSlots: Sendable {
    let store: DeliveryStore

    /// Stores this device's latest snapshot of a feature (and session). Returns `true` when it
    /// replaced the slot (or filled an empty one), `false` when the stored revision is equal or higher.
    @discardableResult
    public func putOutbound(featureID: String, sessionID: UUID? = nil, revision: UInt64,
                                bytes: [UInt8], at time: Date) throws -> Bool {
        try store.withConnection { db in
            let operation = "store outbound snapshot of feature \(featureID)"
            try db.run("""
                INSERT INTO outbound_slot (feature, session, revision, bytes, updated_at) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (feature, session) DO UPDATE
                SET revision = excluded.revision, bytes = excluded.bytes, updated_at = excluded.updated_at
                WHERE excluded.revision > outbound_slot.revision
                """, [.text(featureID), StoreColumns.slotKey(sessionID),
                      try StoreColumns.integer(revision, name: "revision", operation: operation, path: store.path),
                      .blob(bytes), StoreColumns.value(time)], operation)
            return db.changes > 0
        }
    }

    /// This device's latest snapshot of a feature (and session), if any.
    public func outbound(featureID: String, sessionID: UUID? = nil) throws -> SnapshotSlot? {
        try store.withConnection { db in
            try db.first("""
                SELECT NULL, feature, session, revision, bytes, updated_at FROM outbound_slot
                WHERE feature = ? AND session = ?
                """, [.text(featureID), StoreColumns.slotKey(sessionID)], "read outbound snapshot", row: Self.slot) ?? nil
        }
    }

    /// All outbound slots (pushed to each peer on channel activation), by feature.
    public func listOutbound() throws -> [SnapshotSlot] {
        try store.withConnection { db in
            try db.query("SELECT NULL, feature, session, revision, bytes, updated_at FROM outbound_slot ORDER BY feature, session",
                         [], "list outbound snapshots", row: Self.slot).compactMap { $0 }
        }
    }

    /// Deletes an outbound slot. Returns whether there was one.
    @discardableResult
    public func deleteOutbound(featureID: String, sessionID: UUID? = nil) throws -> Bool {
        try store.withConnection { db in
            try db.run("DELETE FROM outbound_slot WHERE feature = ? AND session = ?",
                       [.text(featureID), StoreColumns.slotKey(sessionID)], "delete outbound snapshot")
            return db.changes > 0
        }
    }

    /// Stores the latest snapshot received from `peer`. Returns `true` when it replaced the
    /// slot (or filled an empty one), `false` when the stored revision is equal or higher.
    @discardableResult
    public func putInbound(peer: String, featureID: String, sessionID: UUID? = nil, revision: UInt64,
                               bytes: [UInt8], at time: Date) throws -> Bool {
        try store.withConnection { db in
            let operation = "store snapshot of feature \(featureID) from peer \(peer)"
            try db.run("""
                INSERT INTO inbound_slot (peer, feature, session, revision, bytes, updated_at) VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT (peer, feature, session) DO UPDATE
                SET revision = excluded.revision, bytes = excluded.bytes, updated_at = excluded.updated_at
                WHERE excluded.revision > inbound_slot.revision
                """, [.text(peer), .text(featureID), StoreColumns.slotKey(sessionID),
                      try StoreColumns.integer(revision, name: "revision", operation: operation, path: store.path),
                      .blob(bytes), StoreColumns.value(time)], operation)
            return db.changes > 0
        }
    }

    /// The latest snapshot of a feature (and session) received from `peer`, readable while the peer is off.
    public func inbound(peer: String, featureID: String, sessionID: UUID? = nil) throws -> SnapshotSlot? {
        try store.withConnection { db in
            try db.first("""
                SELECT peer, feature, session, revision, bytes, updated_at FROM inbound_slot
                WHERE peer = ? AND feature = ? AND session = ?
                """, [.text(peer), .text(featureID), StoreColumns.slotKey(sessionID)], "read inbound snapshot", row: Self.slot) ?? nil
        }
    }

    /// Inbound slots of one peer, or of all peers when `peer` is `nil`, by peer then feature.
    public func listInbound(peer: String? = nil) throws -> [SnapshotSlot] {
        try store.withConnection { db in
            try db.query("""
                SELECT peer, feature, session, revision, bytes, updated_at FROM inbound_slot
                WHERE ?1 IS NULL OR peer = ?1 ORDER BY peer, feature, session
                """, [.optional(peer)], "list inbound snapshots", row: Self.slot).compactMap { $0 }
        }
    }

    /// Deletes every inbound slot of `peer`. Returns how many.
    @discardableResult
    public func deleteInbound(peer: String) throws -> Int {
        try store.withConnection { db in
            try db.run("DELETE FROM inbound_slot WHERE peer = ?", [.text(peer)], "delete snapshots of peer \(peer)")
            return db.changes
        }
    }

    /// Maps `peer, feature, session, revision, bytes, updated_at`. A row whose session key was
    /// damaged in the file cannot be addressed (a lookup by key never finds it): nil, and lists
    /// leave it out instead of failing whole (the activation push of every outbound slot,
    /// `meshctl snapshot`).
    private static func slot(_ row: SQLiteStatement) -> SnapshotSlot? {
        let session = StoreColumns.optionalID(row, 2)
        if session.isDamaged { return nil }
        return SnapshotSlot(peer: row.isNull(0) ? nil : row.text(0), featureID: row.text(1), sessionID: session.id,
                            revision: StoreColumns.unsigned(row, 3), bytes: row.blob(4), updatedAt: StoreColumns.date(row, 5))
    }
}
