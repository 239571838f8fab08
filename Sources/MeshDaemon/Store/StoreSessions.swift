import Foundation

/// The session directory and timer anchors of a ``DeliveryStore`` (`store.sessions`): one
/// directory row per (feature, session), one anchor per (feature, session, sender); latest
/// revision wins. Naming a session ID never reaches a row of another feature.
///
/// A view of the store: it runs on the store's connection under the store's lock.
public struct StoreSessions: Sendable {
    let store: DeliveryStore

    /// Stores a row of this device (`sourcePeer` nil) or one a peer sent. Returns `true` when it
    /// was new or its revision is strictly higher than the stored one; a stale row is ignored
    /// (a closed session is never revived by it). A peer's row goes through ``putFromPeer(_:)``.
    ///
    /// `ownerUID`: the local uid whose app announces or closes the session. A new row of this
    /// device is that uid's and must fit its share (`uid_max_sessions`; over it: `.full` naming
    /// the share, nothing stored); a row that exists keeps its uid (or none) and never counts again.
    @discardableResult
    public func put(_ record: SessionRecord, ownerUID: UInt32? = nil) throws -> Bool {
        if record.sourcePeer != nil { return try putFromPeer(record) == .stored }
        return try store.withConnection { db in
            // nil: no row; .some(nil): this device's row; .some(peer): a peer's row.
            let previous: String?? = try db.first("""
                SELECT source_peer FROM session_directory WHERE feature = ? AND session_id = ?
                """, [.text(record.featureID), .blob(StoreColumns.blob(record.sessionID))], "read session") {
                $0.isNull(0) ? nil : $0.text(0)
            }
            let owner = previous == nil ? ownerUID : nil
            if let owner {
                let operation = "store session \(record.sessionID) of feature \(record.featureID)"
                do {
                    try checkShare(.sessions, of: owner, operation: operation)
                } catch {
                    // A share full of closed sessions makes room by forgetting the oldest.
                    guard try forgetOldestClosed(peer: nil, uid: owner, db: db) else { throw error }
                    try checkShare(.sessions, of: owner, operation: operation)
                }
            }
            guard try write(record, ownerUID: owner, db: db) else { return false }
            // The row is this device's now: no longer part of the peer's share.
            if case let peer?? = previous { store.tallies.addPeerState(peer, PeerStateTally() - PeerStateTally(sessions: 1)) }
            if previous == nil { addToShare(.sessions, uid: owner, 1) }
            return true
        }
    }

    /// Stores a row `record.sourcePeer` sent: only over a row of the same peer (never over this
    /// device's or another peer's: `.notOwned`), only with a higher revision (`.stale`), and a
    /// new row only within the peer's share and the total (`.refused`).
    public func putFromPeer(_ record: SessionRecord) throws -> StorePutResult {
        guard let peer = record.sourcePeer else { return try put(record) ? .stored : .stale }
        return try store.withConnection { db in
            let existing = try db.first("""
                SELECT revision, source_peer FROM session_directory WHERE feature = ? AND session_id = ?
                """, [.text(record.featureID), .blob(StoreColumns.blob(record.sessionID))], "read session") {
                (StoreColumns.unsigned($0, 0), $0.isNull(1) ? nil : $0.text(1))
            }
            if let existing {
                guard existing.1 == peer else { return .notOwned }
                guard record.revision > existing.0 else { return .stale }
                return try write(record, db: db) ? .stored : .stale
            }
            if let limit = try limitOfNewRow(of: peer, db: db) { return .refused(limit) }
            guard try write(record, db: db) else { return .stale }
            store.tallies.addPeerState(peer, PeerStateTally(sessions: 1))
            return .stored
        }
    }

    /// The limit one more row of `peer`'s would pass, after the peer's own closed sessions made
    /// room (oldest first); nil when it fits. The caller holds the connection.
    func limitOfNewRow(of peer: String, db: SQLiteConnection) throws -> StoreLimit? {
        func exceeded() -> StoreLimit? {
            store.options.peerState.exceeded(adding: PeerStateTally(sessions: 1), to: store.tallies.peerState[peer] ?? PeerStateTally(),
                                             total: store.tallies.peerStateTotal)
        }
        guard let limit = exceeded() else { return nil }
        guard try forgetOldestClosed(peer: peer, uid: nil, db: db), exceeded() == nil else { return limit }
        return nil
    }

    func write(_ record: SessionRecord, ownerUID: UInt32? = nil, db: SQLiteConnection) throws -> Bool {
        let operation = "store session \(record.sessionID) of feature \(record.featureID)"
        try db.run("""
            INSERT INTO session_directory (feature, session_id, owner, status, updated_at, revision, source_peer, owner_uid, handed_over)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (feature, session_id) DO UPDATE
            SET owner = excluded.owner, status = excluded.status, updated_at = excluded.updated_at,
                revision = excluded.revision, source_peer = excluded.source_peer,
                handed_over = CASE WHEN session_directory.source_peer IS excluded.source_peer
                                   THEN max(session_directory.handed_over, excluded.handed_over)
                                   ELSE excluded.handed_over END
            WHERE excluded.revision > session_directory.revision
              AND (excluded.source_peer IS NULL OR session_directory.source_peer IS excluded.source_peer)
            """, [.text(record.featureID), .blob(StoreColumns.blob(record.sessionID)), .text(record.owner),
                  .text(record.status), StoreColumns.value(record.updatedAt),
                  try StoreColumns.integer(record.revision, name: "revision", operation: operation, path: store.path),
                  .optional(record.sourcePeer), StoreColumns.value(ownerUID: ownerUID), .integer(record.handedOver ? 1 : 0)], operation)
        return db.changes > 0
    }

    /// The directory row of a (feature, session), if any.
    public func record(featureID: String, id: UUID) throws -> SessionRecord? {
        try store.withConnection { db in
            try db.first("""
                SELECT session_id, feature, owner, status, updated_at, revision, source_peer, handed_over
                FROM session_directory WHERE feature = ? AND session_id = ?
                """, [.text(featureID), .blob(StoreColumns.blob(id))], "read session", row: Self.sessionRow) ?? nil
        }
    }

    /// The features that have a directory row or a timer anchor of session `id` (by index), sorted.
    public func features(of id: UUID) throws -> [String] {
        try store.withConnection { db in
            try db.query("""
                SELECT feature FROM session_directory WHERE session_id = ?1
                UNION SELECT feature FROM timer_anchor WHERE session_id = ?1 ORDER BY 1
                """, [.blob(StoreColumns.blob(id))], "read the features of a session") { $0.text(0) }
        }
    }

    /// Directory rows of one feature, or all when `featureID` is `nil`, most recently updated first.
    public func list(featureID: String? = nil) throws -> [SessionRecord] {
        try store.withConnection { db in
            try db.query("""
                SELECT session_id, feature, owner, status, updated_at, revision, source_peer, handed_over
                FROM session_directory WHERE ?1 IS NULL OR feature = ?1 ORDER BY updated_at DESC
                """, [.optional(featureID)], "list sessions", row: Self.sessionRow).compactMap { $0 }
        }
    }

    /// Forgets the oldest closed row of `peer`'s (nil: of this device) that `uid` owns, so a
    /// full share takes a new session: a closed session is over, and its row only keeps a
    /// relaunched app from reviving it, which matters least for the oldest. Returns whether
    /// there was one. The caller holds the connection.
    func forgetOldestClosed(peer: String?, uid: UInt32?, db: SQLiteConnection) throws -> Bool {
        let removed = try db.query("""
            DELETE FROM session_directory WHERE (feature, session_id) IN (
                SELECT feature, session_id FROM session_directory
                WHERE status = 'closed' AND source_peer IS ?1 AND owner_uid IS ?2
                ORDER BY updated_at LIMIT 1)
            RETURNING source_peer, owner_uid
            """, [.optional(peer), StoreColumns.value(ownerUID: uid)], "forget the oldest closed session") {
            (peer: $0.isNull(0) ? nil : $0.text(0), uid: StoreColumns.ownerUID($0, 1))
        }
        for row in removed {
            if let peer = row.peer { store.tallies.addPeerState(peer, PeerStateTally() - PeerStateTally(sessions: 1)) }
            addToShare(.sessions, uid: row.uid, -1)
        }
        return !removed.isEmpty
    }

    /// Deletes a directory row (its peer's or uid's share gets the room back). Returns whether
    /// there was one.
    @discardableResult
    public func delete(featureID: String, id: UUID) throws -> Bool {
        try store.withConnection { db in
            let removed = try db.query("""
                DELETE FROM session_directory WHERE feature = ? AND session_id = ? RETURNING source_peer, owner_uid
                """, [.text(featureID), .blob(StoreColumns.blob(id))], "delete session") {
                (peer: $0.isNull(0) ? nil : $0.text(0), uid: StoreColumns.ownerUID($0, 1))
            }
            for row in removed {
                if let peer = row.peer { store.tallies.addPeerState(peer, PeerStateTally() - PeerStateTally(sessions: 1)) }
                addToShare(.sessions, uid: row.uid, -1)
            }
            return !removed.isEmpty
        }
    }
}
