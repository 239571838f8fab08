import Foundation
import SessionMesh

/// The outbox table of a ``DeliveryStore`` (`store.outbox`): reliable items for peer daemons,
/// per-peer FIFO, deleted only when the peer acks. Per-peer sequences come from `outbox_peer`.
///
/// A view of the store: it runs on the store's connection under the store's lock, and keeps
/// the store's queue tallies in step after each commit.
public struct StoreOutbox: Sendable {
    let store: DeliveryStore

    /// Queues one item for `peer` and returns once it is durable (one transaction, one fsync).
    ///
    /// Throws `.full` naming the limit when a configured limit or the disk is full; nothing
    /// already queued is changed. Enqueueing an event ID still queued for this peer returns
    /// the existing entry (`wasAlreadyQueued`).
    @discardableResult
    public func enqueue(peer: String, item: OutboxItem) throws -> OutboxReceipt {
        try enqueue(peer: peer, items: [item])[0]
    }

    /// Queues many items for `peer` in one transaction (group commit: one fsync for all).
    ///
    /// All or nothing: if any item would exceed a limit, none is stored and `.full` is thrown.
    /// Receipts are in the order of `items`; sequences follow that order.
    @discardableResult
    public func enqueue(peer: String, items: [OutboxItem]) throws -> [OutboxReceipt] {
        guard !items.isEmpty else { return [] }
        return try store.withConnection { db in
            let operation = "enqueue outbox item for peer \(peer)"
            var batch = StoreWriteBatch()
            let receipts = try db.transaction(operation) {
                let receipts = try items.map { try insert($0, peer: peer, db: db, batch: &batch, operation: operation) }
                try saveSequences(db: db, batch: batch, operation: operation)
                return receipts
            }
            store.tallies.apply(batch)
            return receipts
        }
    }

    /// Items queued for `peer` with a sequence above `after`, oldest first, at most `limit`.
    ///
    /// A row whose event or session ID was damaged in the file (altered behind our back) is
    /// repaired in place rather than stopping the peer's queue at it: the event and session ID of
    /// the envelope in the payload (a receiver refuses an item whose IDs differ from its
    /// envelope's), or, when the payload does not decode, a fresh random event ID and no session.
    /// ``OutboxEntry/repairedID`` marks it so the router can count and log it. A row whose
    /// sequence is not an integer (`StoreOpener` could not move it behind a counter at its
    /// maximum) is never read.
    public func pending(peer: String, after sequence: UInt64 = 0, limit: Int = 100) throws -> [OutboxEntry] {
        try store.withConnection { db in
            let operation = "read outbox for peer \(peer)"
            let after = try StoreColumns.integer(sequence, name: "sequence", operation: operation, path: store.path)
            var entries = try db.query("""
                SELECT id, sequence, event_id, feature, session, kind, payload, created_at, attempts, last_attempt_at,
                       owner_uid
                FROM outbox WHERE peer = ? AND sequence > ? AND typeof(sequence) = 'integer' ORDER BY sequence LIMIT ?
                """, [.text(peer), after, .integer(Int64(max(0, limit)))], operation) { row in
                let eventID = StoreColumns.validUUID(row, 2), session = StoreColumns.optionalID(row, 4)
                let item = OutboxItem(eventID: eventID ?? StoreColumns.damagedID, featureID: row.text(3), sessionID: session.id,
                                      kind: UInt8(truncatingIfNeeded: row.int64(5)), payload: row.blob(6),
                                      createdAt: StoreColumns.date(row, 7), ownerUID: StoreColumns.ownerUID(row, 10))
                return OutboxEntry(id: OutboxID(rawValue: row.int64(0)), peer: peer,
                                   sequence: StoreColumns.unsigned(row, 1), item: item,
                                   attempts: Int(row.int64(8)), lastAttemptAt: StoreColumns.optionalDate(row, 9),
                                   repairedID: eventID == nil || session.isDamaged)
            }
            guard entries.contains(where: \.repairedID) else { return entries }
            try db.transaction("repair damaged ids in the outbox of peer \(peer)") {
                for index in entries.indices where entries[index].repairedID {
                    let envelope = try? SessionWireCodec.decodeEnvelopeMetadata(entries[index].item.payload)
                    if entries[index].item.eventID == StoreColumns.damagedID { entries[index].item.eventID = envelope?.eventID ?? UUID() }
                    if let envelope { entries[index].item.sessionID = envelope.sessionID }
                    try db.run("UPDATE outbox SET event_id = ?, session = ? WHERE id = ?",
                               [.blob(StoreColumns.blob(entries[index].item.eventID)), StoreColumns.value(entries[index].item.sessionID),
                                .integer(entries[index].id.rawValue)], operation)
                }
            }
            return entries
        }
    }

    /// The peer daemon stored everything up to `sequence`: deletes those items. Returns how many.
    @discardableResult
    public func acknowledge(peer: String, upTo sequence: UInt64) throws -> Int {
        try store.withConnectionFreeingSpace { db in
            let operation = "acknowledge outbox for peer \(peer)"
            var byUID: [UInt32: QueueTally] = [:]
            let removed = try db.transaction(operation) {
                try deleteAcknowledged(peer: peer, upTo: sequence, db: db, byUID: &byUID, operation: operation)
            }
            store.tallies.removeOutbox(peer: peer, removed)
            store.tallies.removeOutbox(byUID: byUID)
            return removed.items
        }
    }

    /// Deletes `peer`'s outbox items up to `sequence` inside the caller's transaction and returns
    /// what went (and adds what went per owning uid to `byUID`); the caller takes it off the
    /// tallies once the transaction commits.
    func deleteAcknowledged(peer: String, upTo sequence: UInt64, db: SQLiteConnection,
                            byUID: inout [UInt32: QueueTally], operation: String) throws -> QueueTally {
        let upTo = try StoreColumns.integer(sequence, name: "sequence", operation: operation, path: store.path)
        // Sums per owner, then a plain delete: `DELETE … RETURNING` materialises every deleted
        // row's result in an ephemeral table first.
        let groups = try db.query("""
            SELECT owner_uid, COUNT(*), COALESCE(SUM(LENGTH(payload)), 0) FROM outbox WHERE peer = ? AND sequence <= ?
            GROUP BY owner_uid
            """, [.text(peer), upTo], operation) {
            (StoreColumns.ownerUID($0, 0), QueueTally(items: Int($0.int64(1)), bytes: Int($0.int64(2))))
        }
        var removed = QueueTally()
        for (uid, tally) in groups {
            removed = removed + tally
            if let uid { byUID[uid] = (byUID[uid] ?? QueueTally()) + tally }
        }
        guard removed.items > 0 else { return removed }
        try db.run("DELETE FROM outbox WHERE peer = ? AND sequence <= ?", [.text(peer), upTo], operation)
        return removed
    }

    /// The peer daemon stored these events: deletes exactly those items of `peer`. Returns how many.
    @discardableResult
    public func acknowledge(peer: String, eventIDs: [UUID]) throws -> Int {
        guard !eventIDs.isEmpty else { return 0 }
        return try store.withConnectionFreeingSpace { db in
            let operation = "acknowledge outbox for peer \(peer)"
            let sizes = try db.transaction(operation) {
                try eventIDs.flatMap { eventID in
                    try db.query("DELETE FROM outbox WHERE peer = ? AND event_id = ? RETURNING LENGTH(payload), owner_uid",
                                 [.text(peer), .blob(StoreColumns.blob(eventID))], operation) {
                        (size: Int($0.int64(0)), uid: StoreColumns.ownerUID($0, 1))
                    }
                }
            }
            store.tallies.removeOutbox(peer: peer, QueueTally(items: sizes.count, bytes: sizes.reduce(0) { $0 + $1.size }))
            store.tallies.removeOutbox(byUID: Self.byUID(sizes))
            return sizes.count
        }
    }

    /// Records a send attempt of these items (attempt count + 1, last attempt time) in one transaction.
    public func recordAttempt(peer: String, sequences: [UInt64], at time: Date) throws {
        guard !sequences.isEmpty else { return }
        try store.withConnection { db in
            let operation = "record send attempt for peer \(peer)"
            try db.transaction(operation) {
                for sequence in sequences {
                    let value = try StoreColumns.integer(sequence, name: "sequence", operation: operation, path: store.path)
                    try db.run("UPDATE outbox SET attempts = attempts + 1, last_attempt_at = ? WHERE peer = ? AND sequence = ?",
                               [StoreColumns.value(time), .text(peer), value], operation)
                }
            }
        }
    }

    /// Cancels one queued item (`meshctl queue cancel ID`). Returns `false` when no such item is
    /// queued, or when `permits` is given and does not accept the item's feature (it stays queued).
    @discardableResult
    public func cancel(id: OutboxID, permitting permits: ((String) -> Bool)? = nil) throws -> Bool {
        try store.withConnectionFreeingSpace { db in
            let operation = "cancel outbox item \(id)"
            let removed = try db.transaction(operation) { () throws -> (String, Int, UInt32?)? in
                if let permits {
                    let feature = try db.first("SELECT feature FROM outbox WHERE id = ?", [.integer(id.rawValue)], operation) { $0.text(0) }
                    guard let feature, permits(feature) else { return nil }
                }
                return try db.first("DELETE FROM outbox WHERE id = ? RETURNING peer, LENGTH(payload), owner_uid",
                                    [.integer(id.rawValue)], operation) {
                    ($0.text(0), Int($0.int64(1)), StoreColumns.ownerUID($0, 2))
                }
            }
            guard let (peer, size, uid) = removed else { return false }
            store.tallies.removeOutbox(peer: peer, QueueTally(items: 1, bytes: size))
            store.tallies.addOutbox(uid: uid, QueueTally(items: -1, bytes: -size))
            return true
        }
    }

    /// Outstanding transfers without payloads, by peer then sequence (`meshctl queue`).
    public func list(peer: String? = nil, limit: Int = 1_000) throws -> [OutboxSummary] {
        try store.withConnection { db in
            try db.query("""
                SELECT id, peer, sequence, event_id, feature, session, kind, LENGTH(payload), created_at,
                       attempts, last_attempt_at
                FROM outbox WHERE ?1 IS NULL OR peer = ?1 ORDER BY peer, sequence LIMIT ?2
                """, [.optional(peer), .integer(Int64(max(0, limit)))], "list outbox") { row in
                // A damaged ID is shown as the all-zero UUID; the pump repairs it when it sends the item.
                OutboxSummary(id: OutboxID(rawValue: row.int64(0)), peer: row.text(1),
                              sequence: StoreColumns.unsigned(row, 2),
                              eventID: StoreColumns.validUUID(row, 3) ?? StoreColumns.damagedID,
                              featureID: row.text(4),
                              sessionID: StoreColumns.optionalID(row, 5).idOrStandIn,
                              kind: UInt8(truncatingIfNeeded: row.int64(6)), size: Int(row.int64(7)),
                              createdAt: StoreColumns.date(row, 8), attempts: Int(row.int64(9)),
                              lastAttemptAt: StoreColumns.optionalDate(row, 10))
            }
        }
    }

    /// Inserts one item inside an open transaction, recording what it added in `batch`.
    func insert(_ item: OutboxItem, peer: String, db: SQLiteConnection, batch: inout StoreWriteBatch,
                      operation: String) throws -> OutboxReceipt {
        let eventID = StoreColumns.blob(item.eventID)
        let one = QueueTally(items: 1, bytes: item.payload.count)
        let peerAdded = (batch.outboxAdded[peer] ?? QueueTally()) + one
        let uidAdded = item.ownerUID.map { (batch.outboxAddedByUID[$0] ?? QueueTally()) + one }
        do {
            try checkLimits(peer: peer, peerAdding: peerAdded, totalAdding: batch.outboxTotalAdded + one, operation: operation)
            if let uid = item.ownerUID, let uidAdded { try checkShare(of: uid, adding: uidAdded, operation: operation) }
        } catch {
            // A send of an event queued already is answered with its receipt, full or not.
            if let existing = try queued(peer: peer, eventID: eventID, db: db, operation: operation) { return existing }
            throw error
        }
        let last = batch.lastSequence[peer] ?? store.tallies.lastSequence[peer] ?? 0
        // A counter at the largest storable sequence (only a damaged file has one) cannot
        // number another item: this peer's sends fail with the row named, nothing traps, and
        // every other peer's queue goes on.
        guard last < UInt64(Int64.max) else {
            throw StoreError(code: .corrupt, operation: operation, path: store.path,
                             detail: "table outbox_peer, row of peer \(peer): last_sequence is \(last), the largest sequence a "
                                 + "store can hold, so no further item can be queued for this peer; the file was damaged or "
                                 + "altered (sequences never repeat for a device, so the counter is not lowered automatically)")
        }
        let sequence = last + 1
        // One statement for the common case, a new event: its unique index finds a duplicate
        // (an app sending the same event again), which is then looked up. A lookup before
        // every insert cost ≈ 15 % of the insert.
        try db.run("""
            INSERT INTO outbox (peer, sequence, event_id, feature, session, kind, payload, created_at, owner_uid)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (peer, event_id) DO NOTHING
            """, [.text(peer), .integer(Int64(sequence)), .blob(eventID), .text(item.featureID),
                  StoreColumns.value(item.sessionID), .integer(Int64(item.kind)), .blob(item.payload),
                  StoreColumns.value(item.createdAt), StoreColumns.value(ownerUID: item.ownerUID)], operation)
        guard db.changes > 0 else {
            guard let existing = try queued(peer: peer, eventID: eventID, db: db, operation: operation) else {
                throw StoreError(code: .internalError, operation: operation, path: store.path,
                                 detail: "the outbox neither took event \(item.eventID) nor holds it")
            }
            return existing
        }
        batch.lastSequence[peer] = sequence
        batch.outboxAdded[peer] = peerAdded
        batch.outboxTotalAdded = batch.outboxTotalAdded + one
        if let uid = item.ownerUID { batch.outboxAddedByUID[uid] = uidAdded }
        return OutboxReceipt(id: OutboxID(rawValue: db.lastInsertRowID), sequence: sequence, wasAlreadyQueued: false)
    }

    /// The receipt of `eventID` when it is queued for `peer` already.
    private func queued(peer: String, eventID: [UInt8], db: SQLiteConnection, operation: String) throws -> OutboxReceipt? {
        try db.first("SELECT id, sequence FROM outbox WHERE peer = ? AND event_id = ?",
                     [.text(peer), .blob(eventID)], operation, row: {
            OutboxReceipt(id: OutboxID(rawValue: $0.int64(0)), sequence: StoreColumns.unsigned($0, 1), wasAlreadyQueued: true)
        })
    }

    /// Persists the advanced per-peer sequence counters of `batch` (same transaction).
    func saveSequences(db: SQLiteConnection, batch: StoreWriteBatch, operation: String) throws {
        for (peer, last) in batch.lastSequence {
            try db.run("""
                INSERT INTO outbox_peer (peer, last_sequence) VALUES (?, ?)
                ON CONFLICT (peer) DO UPDATE SET last_sequence = excluded.last_sequence
                """, [.text(peer), .integer(Int64(last))], operation)
        }
    }

    /// Throws `.full` naming the first limit that the uncommitted additions would exceed.
    private func checkLimits(peer: String, peerAdding: QueueTally, totalAdding: QueueTally, operation: String) throws {
        let options = store.options    // plain integers: a copy costs nothing
        let peerTally = (store.tallies.outboxByPeer[peer] ?? QueueTally()) + peerAdding
        let total = store.tallies.outbox + totalAdding
        let limit: StoreLimit? =
            if peerTally.items > options.maxOutboxItemsPerPeer { .outboxItemsPerPeer(options.maxOutboxItemsPerPeer) }
            else if peerTally.bytes > options.maxOutboxBytesPerPeer { .outboxBytesPerPeer(options.maxOutboxBytesPerPeer) }
            else if total.items > options.maxOutboxItemsTotal { .outboxItemsTotal(options.maxOutboxItemsTotal) }
            else if total.bytes > options.maxOutboxBytesTotal { .outboxBytesTotal(options.maxOutboxBytesTotal) }
            else { nil }
        if let limit {
            let queued = store.tallies.outboxByPeer[peer] ?? QueueTally()
            throw StoreError(code: .full, operation: operation, path: store.path, limit: limit,
                             detail: "the outbox is full (\(queued.items) items, \(queued.bytes) bytes queued for this peer)")
        }
    }
}
