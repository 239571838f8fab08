import Foundation

/// The session directory and timer anchors of a ``DeliveryStore`` (`store.sessions`): one row
/// per session in each, latest revision wins.
///
/// A view of the store: it runs on the store's connection under the store's lock.
public struct StoreSessions: Sendable {
    let store: DeliveryStore

    /// Stores a directory row. Returns `true` when it was new or its revision is strictly higher
    /// than the stored one; a stale row is ignored (a closed session is never revived by it).
    @discardableResult
    public func put(_ record: SessionRecord) throws -> Bool {
        try store.withConnection { db in
            let operation = "store session \(record.sessionID)"
            try db.run("""
                INSERT INTO session_directory (session_id, feature, owner, status, updated_at, revision, source_peer)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (session_id) DO UPDATE
                SET feature = excluded.feature, owner = excluded.owner, status = excluded.status,
                    updated_at = excluded.updated_at, revision = excluded.revision, source_peer = excluded.source_peer
                WHERE excluded.revision > session_directory.revision
                """, [.blob(StoreColumns.blob(record.sessionID)), .text(record.featureID), .text(record.owner),
                      .text(record.status), StoreColumns.value(record.updatedAt),
                      try StoreColumns.integer(record.revision, name: "revision", operation: operation, path: store.path),
                      .optional(record.sourcePeer)], operation)
            return db.changes > 0
        }
    }

    /// The directory row of a session, if any.
    public func record(id: UUID) throws -> SessionRecord? {
        try store.withConnection { db in
            try db.first("""
                SELECT session_id, feature, owner, status, updated_at, revision, source_peer
                FROM session_directory WHERE session_id = ?
                """, [.blob(StoreColumns.blob(id))], "read session", row: Self.sessionRow) ?? nil
        }
    }

    /// Directory rows of one feature, or all when `featureID` is `nil`, most recently updated first.
    public func list(featureID: String? = nil) throws -> [SessionRecord] {
        try store.withConnection { db in
            try db.query("""
                SELECT session_id, feature, owner, status, updated_at, revision, source_peer
                FROM session_directory WHERE ?1 IS NULL OR feature = ?1 ORDER BY updated_at DESC
                """, [.optional(featureID)], "list sessions", row: Self.sessionRow).compactMap { $0 }
        }
    }

    /// Deletes a directory row. Returns whether there was one.
    @discardableResult
    public func delete(id: UUID) throws -> Bool {
        try store.withConnection { db in
            try db.run("DELETE FROM session_directory WHERE session_id = ?", [.blob(StoreColumns.blob(id))], "delete session")
            return db.changes > 0
        }
    }

    /// Stores a session's encoded timer anchor. Returns `true` when it was new or its revision
    /// is strictly higher than the stored one.
    @discardableResult
    public func putTimerAnchor(sessionID: UUID, revision: UInt64, bytes: [UInt8], at time: Date) throws -> Bool {
        try store.withConnection { db in
            let operation = "store timer anchor of session \(sessionID)"
            try db.run("""
                INSERT INTO timer_anchor (session_id, revision, bytes, updated_at) VALUES (?, ?, ?, ?)
                ON CONFLICT (session_id) DO UPDATE
                SET revision = excluded.revision, bytes = excluded.bytes, updated_at = excluded.updated_at
                WHERE excluded.revision > timer_anchor.revision
                """, [.blob(StoreColumns.blob(sessionID)),
                      try StoreColumns.integer(revision, name: "revision", operation: operation, path: store.path),
                      .blob(bytes), StoreColumns.value(time)], operation)
            return db.changes > 0
        }
    }

    /// A session's latest timer anchor, if any.
    public func timerAnchor(sessionID: UUID) throws -> TimerAnchorRecord? {
        try store.withConnection { db in
            try db.first("SELECT session_id, revision, bytes, updated_at FROM timer_anchor WHERE session_id = ?",
                         [.blob(StoreColumns.blob(sessionID))], "read timer anchor", row: Self.anchorRow) ?? nil
        }
    }

    /// Every stored timer anchor.
    public func listTimerAnchors() throws -> [TimerAnchorRecord] {
        try store.withConnection { db in
            try db.query("SELECT session_id, revision, bytes, updated_at FROM timer_anchor ORDER BY session_id", [],
                         "list timer anchors", row: Self.anchorRow).compactMap { $0 }
        }
    }

    /// Deletes a session's timer anchor. Returns whether there was one.
    @discardableResult
    public func deleteTimerAnchor(sessionID: UUID) throws -> Bool {
        try store.withConnection { db in
            try db.run("DELETE FROM timer_anchor WHERE session_id = ?", [.blob(StoreColumns.blob(sessionID))],
                       "delete timer anchor")
            return db.changes > 0
        }
    }

    // A row whose key was damaged in the file cannot be addressed (a lookup by key never finds
    // it): read as nil, and lists leave it out instead of failing whole.

    private static func sessionRow(_ row: SQLiteStatement) -> SessionRecord? {
        guard let sessionID = StoreColumns.validUUID(row, 0) else { return nil }
        return SessionRecord(sessionID: sessionID, featureID: row.text(1), owner: row.text(2),
                             status: row.text(3), updatedAt: StoreColumns.date(row, 4), revision: StoreColumns.unsigned(row, 5),
                             sourcePeer: row.isNull(6) ? nil : row.text(6))
    }

    private static func anchorRow(_ row: SQLiteStatement) -> TimerAnchorRecord? {
        guard let sessionID = StoreColumns.validUUID(row, 0) else { return nil }
        return TimerAnchorRecord(sessionID: sessionID, revision: StoreColumns.unsigned(row, 1),
                                 bytes: row.blob(2), updatedAt: StoreColumns.date(row, 3))
    }
}
