import Foundation

/// What ``StoreSessions/putClaim(_:localDevice:)`` did with a session owner hand-over claim.
public enum SessionClaimOutcome: Sendable, Equatable {
    /// Stored; `previous` is the row it replaced (nil: the session was new here).
    case stored(previous: SessionRecord?)
    /// Not stored: the stored row is as good or better (`reply`: strictly better).
    case stale(current: SessionRecord, reply: Bool)
    /// Not stored: the session is closed here.
    case closed
    /// Not stored: a new row would pass this limit (the claimed owner's share or the total).
    case refused(StoreLimit)
}

extension StoreSessions {
    /// The open (not closed) rows that came from `peer`, by the source index.
    public func openRows(from peer: String) throws -> [SessionRecord] {
        try store.withConnection { db in
            try db.query("""
                SELECT session_id, feature, owner, status, updated_at, revision, source_peer, handed_over
                FROM session_directory WHERE source_peer = ? AND status != 'closed'
                """, [.text(peer)], "list the open sessions of a peer", row: Self.sessionRow).compactMap { $0 }
        }
    }

    /// Stores a claim that `claim.sourcePeer` owns the session now (`SessionHandOverRule`),
    /// decided and written under one hold of the connection. Unlike ``putFromPeer(_:)`` it may
    /// replace a row of another peer or of this device (the row moves to the owner's share; a
    /// row of this device leaves its uid's share); a new row must fit the owner's share and the
    /// total, as a peer's own rows must. The row is marked `handedOver`.
    public func putClaim(_ claim: SessionRecord, localDevice: String) throws -> SessionClaimOutcome {
        guard let owner = claim.sourcePeer else { return .stale(current: claim, reply: false) }
        var record = claim
        record.handedOver = true
        return try store.withConnection { db in
            let existing = try db.first("""
                SELECT session_id, feature, owner, status, updated_at, revision, source_peer, handed_over, owner_uid
                FROM session_directory WHERE feature = ? AND session_id = ?
                """, [.text(record.featureID), .blob(StoreColumns.blob(record.sessionID))], "read session") {
                (row: Self.sessionRow($0), uid: StoreColumns.ownerUID($0, 8))
            }
            switch SessionHandOverRule.decide(record, over: existing?.row, local: localDevice) {
            case .closed: return .closed
            case .stale(let reply): return .stale(current: existing?.row ?? record, reply: reply)
            case .accept: break
            }
            if existing == nil, let limit = try limitOfNewRow(of: owner, db: db) { return .refused(limit) }
            let operation = "store the hand-over of session \(record.sessionID) of feature \(record.featureID)"
            try db.run("""
                INSERT INTO session_directory (feature, session_id, owner, status, updated_at, revision, source_peer, owner_uid, handed_over)
                VALUES (?, ?, ?, ?, ?, ?, ?, NULL, 1)
                ON CONFLICT (feature, session_id) DO UPDATE
                SET owner = excluded.owner, status = excluded.status, updated_at = excluded.updated_at,
                    revision = excluded.revision, source_peer = excluded.source_peer, owner_uid = NULL, handed_over = 1
                """, [.text(record.featureID), .blob(StoreColumns.blob(record.sessionID)), .text(record.owner),
                      .text(record.status), StoreColumns.value(record.updatedAt),
                      try StoreColumns.integer(record.revision, name: "revision", operation: operation, path: store.path),
                      .text(owner)], operation)
            let one = PeerStateTally(sessions: 1)
            store.tallies.addPeerState(owner, one)
            if let existing {
                if let previous = existing.row?.sourcePeer {
                    store.tallies.addPeerState(previous, PeerStateTally() - one)
                } else {
                    addToShare(.sessions, uid: existing.uid, -1)
                }
            }
            return .stored(previous: existing?.row)
        }
    }
}
