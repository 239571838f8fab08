import Foundation

/// Timer anchors: one row per (feature, session, sender), the sender `''` for this device.
extension StoreSessions {
    /// Stores an encoded timer anchor of this device (`sourcePeer` nil) or of a peer. Returns
    /// `.stored` when it was new or its revision is strictly higher than the stored one of the
    /// same sender; a peer's new row must fit its share and the total (`.refused`).
    ///
    /// `ownerUID`: the local uid whose app sets this device's anchor. A new anchor is that uid's
    /// and must fit its share (`uid_max_anchors`; over it: `.full` naming the share, nothing
    /// stored); an anchor that exists keeps its uid (or none) and never counts again.
    @discardableResult
    public func putTimerAnchor(featureID: String, sessionID: UUID, from sourcePeer: String? = nil, revision: UInt64,
                               bytes: [UInt8], at time: Date, ownerUID: UInt32? = nil) throws -> StorePutResult {
        try store.withConnection { db in
            let operation = "store timer anchor of session \(sessionID) of feature \(featureID)"
            let key: [SQLiteValue] = [.text(featureID), .blob(StoreColumns.blob(sessionID)), .text(sourcePeer ?? "")]
            let existing = try db.first("""
                SELECT revision, LENGTH(bytes) FROM timer_anchor WHERE feature = ? AND session_id = ? AND source_peer = ?
                """, key, operation) { (StoreColumns.unsigned($0, 0), Int($0.int64(1))) }
            if let existing, existing.0 >= revision { return .stale }
            let delta = existing.map { PeerStateTally(anchorBytes: bytes.count - $0.1) }
                ?? PeerStateTally(anchors: 1, anchorBytes: bytes.count)
            if let peer = sourcePeer, let limit = store.options.peerState.exceeded(
                adding: delta, to: store.tallies.peerState[peer] ?? PeerStateTally(), total: store.tallies.peerStateTotal) {
                return .refused(limit)
            }
            let owner = existing == nil && sourcePeer == nil ? ownerUID : nil
            if let owner { try checkShare(.anchors, of: owner, operation: operation) }
            try db.run("""
                INSERT INTO timer_anchor (feature, session_id, source_peer, revision, bytes, updated_at, owner_uid)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (feature, session_id, source_peer) DO UPDATE
                SET revision = excluded.revision, bytes = excluded.bytes, updated_at = excluded.updated_at
                WHERE excluded.revision > timer_anchor.revision
                """, key + [try StoreColumns.integer(revision, name: "revision", operation: operation, path: store.path),
                            .blob(bytes), StoreColumns.value(time), StoreColumns.value(ownerUID: owner)], operation)
            guard db.changes > 0 else { return .stale }
            if let peer = sourcePeer { store.tallies.addPeerState(peer, delta) }
            if existing == nil { addToShare(.anchors, uid: owner, 1) }
            return .stored
        }
    }

    /// The latest timer anchor of a (feature, session) from `sourcePeer` (nil: this device's), if any.
    public func timerAnchor(featureID: String, sessionID: UUID, from sourcePeer: String? = nil) throws -> TimerAnchorRecord? {
        try store.withConnection { db in
            try db.first("""
                SELECT feature, session_id, source_peer, revision, bytes, updated_at FROM timer_anchor
                WHERE feature = ? AND session_id = ? AND source_peer = ?
                """, [.text(featureID), .blob(StoreColumns.blob(sessionID)), .text(sourcePeer ?? "")],
                         "read timer anchor", row: Self.anchorRow) ?? nil
        }
    }

    /// Every stored timer anchor (`localOnly`: only this device's, what activation resends).
    public func listTimerAnchors(localOnly: Bool = false) throws -> [TimerAnchorRecord] {
        try store.withConnection { db in
            try db.query("""
                SELECT feature, session_id, source_peer, revision, bytes, updated_at FROM timer_anchor
                WHERE ?1 = 0 OR source_peer = '' ORDER BY feature, session_id, source_peer
                """, [.integer(localOnly ? 1 : 0)], "list timer anchors", row: Self.anchorRow).compactMap { $0 }
        }
    }

    /// Deletes a timer anchor of a (feature, session) from `sourcePeer` (nil: this device's); its
    /// peer's or uid's share gets the room back. Returns whether there was one.
    @discardableResult
    public func deleteTimerAnchor(featureID: String, sessionID: UUID, from sourcePeer: String? = nil) throws -> Bool {
        try store.withConnection { db in
            let removed = try db.query("""
                DELETE FROM timer_anchor WHERE feature = ? AND session_id = ? AND source_peer = ? RETURNING LENGTH(bytes), owner_uid
                """, [.text(featureID), .blob(StoreColumns.blob(sessionID)), .text(sourcePeer ?? "")],
                                       "delete timer anchor") { (size: Int($0.int64(0)), uid: StoreColumns.ownerUID($0, 1)) }
            if let peer = sourcePeer, let size = removed.first?.size {
                store.tallies.addPeerState(peer, PeerStateTally() - PeerStateTally(anchors: 1, anchorBytes: size))
            }
            for row in removed { addToShare(.anchors, uid: row.uid, -1) }
            return !removed.isEmpty
        }
    }

    // A row whose key was damaged in the file cannot be addressed (a lookup by key never finds
    // it): read as nil, and lists leave it out instead of failing whole.

    static func sessionRow(_ row: SQLiteStatement) -> SessionRecord? {
        guard let sessionID = StoreColumns.validUUID(row, 0) else { return nil }
        return SessionRecord(sessionID: sessionID, featureID: row.text(1), owner: row.text(2),
                             status: row.text(3), updatedAt: StoreColumns.date(row, 4), revision: StoreColumns.unsigned(row, 5),
                             sourcePeer: row.isNull(6) ? nil : row.text(6), handedOver: row.int64(7) != 0)
    }

    static func anchorRow(_ row: SQLiteStatement) -> TimerAnchorRecord? {
        guard let sessionID = StoreColumns.validUUID(row, 1) else { return nil }
        let source = row.text(2)
        return TimerAnchorRecord(featureID: row.text(0), sessionID: sessionID, sourcePeer: source.isEmpty ? nil : source,
                                 revision: StoreColumns.unsigned(row, 3), bytes: row.blob(4), updatedAt: StoreColumns.date(row, 5))
    }
}
