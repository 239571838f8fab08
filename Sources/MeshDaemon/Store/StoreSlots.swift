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
    ///
    /// `ownerUID`: the local uid whose app publishes. A new slot is that uid's; a slot keeps the
    /// uid that created it, and its change in bytes counts toward that uid. Throws `.full` naming
    /// the share (`uid_max_slots`, `uid_max_slot_bytes`) when the slot's uid would pass it;
    /// nothing stored changes.
    @discardableResult
    public func putOutbound(featureID: String, sessionID: UUID? = nil, revision: UInt64,
                            bytes: [UInt8], at time: Date, ownerUID: UInt32? = nil) throws -> Bool {
        try store.withConnection { db in
            let operation = "store outbound snapshot of feature \(featureID)"
            let stored = try StoreColumns.integer(revision, name: "revision", operation: operation, path: store.path)
            let key = [SQLiteValue.text(featureID), StoreColumns.slotKey(sessionID)]
            let existing = try db.first("SELECT revision, LENGTH(bytes), owner_uid FROM outbound_slot WHERE feature = ? AND session = ?",
                                        key, operation) { (revision: $0.int64(0), size: Int($0.int64(1)), uid: StoreColumns.ownerUID($0, 2)) }
            if let existing, case .integer(let new) = stored, new <= existing.revision { return false }
            let owner = existing.map(\.uid) ?? ownerUID
            let delta = existing.map { QueueTally(items: 0, bytes: bytes.count - $0.size) } ?? QueueTally(items: 1, bytes: bytes.count)
            if let owner { try checkOutboundShare(of: owner, adding: delta, operation: operation) }
            try db.run("""
                INSERT INTO outbound_slot (feature, session, revision, bytes, updated_at, owner_uid) VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT (feature, session) DO UPDATE
                SET revision = excluded.revision, bytes = excluded.bytes, updated_at = excluded.updated_at
                WHERE excluded.revision > outbound_slot.revision
                """, key + [stored, .blob(bytes), StoreColumns.value(time), StoreColumns.value(ownerUID: owner)], operation)
            guard db.changes > 0 else { return false }
            store.tallies.addOutboundSlots(uid: owner, delta)
            return true
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

    /// The key and revision of every outbound slot, without their bytes (the relay mailbox's
    /// pass compares them with what the peer acknowledged), by feature and session. A slot
    /// without a session, or whose session key was damaged, is left out.
    public func listOutboundRevisions() throws -> [(featureID: String, sessionID: UUID, revision: UInt64)] {
        try store.withConnection { db in
            try db.query("SELECT feature, session, revision FROM outbound_slot ORDER BY feature, session", [],
                         "list outbound snapshot revisions") { row -> (featureID: String, sessionID: UUID, revision: UInt64)? in
                let session = StoreColumns.optionalID(row, 1)
                guard !session.isDamaged, let id = session.id else { return nil }
                return (row.text(0), id, StoreColumns.unsigned(row, 2))
            }.compactMap { $0 }
        }
    }

    /// Deletes an outbound slot. Returns whether there was one.
    @discardableResult
    public func deleteOutbound(featureID: String, sessionID: UUID? = nil) throws -> Bool {
        try store.withConnection { db in
            let removed = try db.first("DELETE FROM outbound_slot WHERE feature = ? AND session = ? RETURNING LENGTH(bytes), owner_uid",
                                       [.text(featureID), StoreColumns.slotKey(sessionID)], "delete outbound snapshot") {
                (size: Int($0.int64(0)), uid: StoreColumns.ownerUID($0, 1))
            }
            guard let removed else { return false }
            store.tallies.addOutboundSlots(uid: removed.uid, QueueTally(items: -1, bytes: -removed.size))
            return true
        }
    }

    /// Stores the latest snapshot received from `peer`: `.stored` when it replaced the slot (or
    /// filled an empty one), `.stale` when the stored revision is equal or higher, `.refused`
    /// when it would pass the peer's share or the total of inbound slots (count or bytes;
    /// ``PeerStateLimits``).
    @discardableResult
    public func putInbound(peer: String, featureID: String, sessionID: UUID? = nil, revision: UInt64,
                           bytes: [UInt8], at time: Date) throws -> StorePutResult {
        try store.withConnection { db in
            let operation = "store snapshot of feature \(featureID) from peer \(peer)"
            let key: [SQLiteValue] = [.text(peer), .text(featureID), StoreColumns.slotKey(sessionID)]
            let existing = try db.first("""
                SELECT revision, LENGTH(bytes) FROM inbound_slot WHERE peer = ? AND feature = ? AND session = ?
                """, key, operation) { (StoreColumns.unsigned($0, 0), Int($0.int64(1))) }
            if let existing, existing.0 >= revision { return .stale }
            let delta = existing.map { PeerStateTally(slotBytes: bytes.count - $0.1) }
                ?? PeerStateTally(slots: 1, slotBytes: bytes.count)
            if let limit = store.options.peerState.exceeded(adding: delta, to: store.tallies.peerState[peer] ?? PeerStateTally(),
                                                            total: store.tallies.peerStateTotal) {
                return .refused(limit)
            }
            try db.run("""
                INSERT INTO inbound_slot (peer, feature, session, revision, bytes, updated_at) VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT (peer, feature, session) DO UPDATE
                SET revision = excluded.revision, bytes = excluded.bytes, updated_at = excluded.updated_at
                WHERE excluded.revision > inbound_slot.revision
                """, key + [try StoreColumns.integer(revision, name: "revision", operation: operation, path: store.path),
                            .blob(bytes), StoreColumns.value(time)], operation)
            guard db.changes > 0 else { return .stale }
            store.tallies.addPeerState(peer, delta)
            return .stored
        }
    }

    /// The most recently updated inbound slot of a feature (and session), from `peer` or (nil)
    /// from any peer: one indexed read (`inbound_slot_by_key`, or the key itself), never the
    /// whole table.
    public func latestInbound(featureID: String, peer: String?, sessionID: UUID?) throws -> SnapshotSlot? {
        try store.withConnection { db in
            let sql: String, values: [SQLiteValue]
            switch (peer, sessionID) {
            case (let peer?, let session?):
                sql = "WHERE peer = ? AND feature = ? AND session = ?"
                values = [.text(peer), .text(featureID), StoreColumns.slotKey(session)]
            case (let peer?, nil):
                sql = "WHERE peer = ? AND feature = ? ORDER BY updated_at DESC LIMIT 1"
                values = [.text(peer), .text(featureID)]
            case (nil, let session?):
                sql = "WHERE feature = ? AND session = ? ORDER BY updated_at DESC LIMIT 1"
                values = [.text(featureID), StoreColumns.slotKey(session)]
            case (nil, nil):
                sql = "WHERE feature = ? ORDER BY updated_at DESC LIMIT 1"
                values = [.text(featureID)]
            }
            return try db.first("SELECT peer, feature, session, revision, bytes, updated_at FROM inbound_slot " + sql,
                                values, "read latest inbound snapshot", row: Self.slot) ?? nil
        }
    }

    /// The most recently updated outbound slot of a session (and of `featureID` when given): one
    /// indexed read (`outbound_slot_by_session` or the key), never the whole table.
    public func latestOutbound(sessionID: UUID, featureID: String?) throws -> SnapshotSlot? {
        try store.withConnection { db in
            try db.first("""
                SELECT NULL, feature, session, revision, bytes, updated_at FROM outbound_slot
                WHERE session = ?1 AND (?2 IS NULL OR feature = ?2) ORDER BY updated_at DESC LIMIT 1
                """, [StoreColumns.slotKey(sessionID), .optional(featureID)], "read outbound snapshot",
                         row: Self.slot) ?? nil
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
            let sizes = try db.query("DELETE FROM inbound_slot WHERE peer = ? RETURNING LENGTH(bytes)", [.text(peer)],
                                     "delete snapshots of peer \(peer)") { Int($0.int64(0)) }
            store.tallies.addPeerState(peer, PeerStateTally() - PeerStateTally(slots: sizes.count, slotBytes: sizes.reduce(0, +)))
            return sizes.count
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
