import Foundation

/// The inbox tables of a ``DeliveryStore`` (`store.inbox`): items received from peer daemons,
/// deduplicated by event ID, kept until an app acks; and the seen-sets that remember event IDs
/// after that (`acked_batch`) or that reached an app by another path (`seen_batch`).
///
/// A view of the store: it runs on the store's connection under the store's lock, and keeps
/// the store's inbox tally and seen-sets in memory in step after each commit.
public struct StoreInbox: Sendable {
    let store: DeliveryStore

    /// Stores received items from `peer` in one transaction and says, per item, whether it was
    /// new or a duplicate. Acknowledge both kinds to the sender once this returns.
    ///
    /// Dedup looks at the inbox and at the seen-set, which remembers the last
    /// ``DeliveryStoreOptions/dedupHorizonPerPeer`` event IDs per peer after an app acknowledged
    /// them (and, apart, as many realtime IDs). All or nothing: if the new items would exceed an
    /// inbox limit, nothing is stored and `.full` is thrown (do not ack; the sender retries later).
    ///
    /// With `storingWhatFits`, an item over the inbox's configured limits ends the list instead of
    /// failing it: the items before it are stored (and their receipts returned, fewer than
    /// `items`), so a batch larger than the room left still makes progress. When not even the
    /// first item fits, it throws `.full` as without.
    ///
    /// Items of `handedOutFeatures` are recorded as delivered in the same transaction (as
    /// ``markDelivered(ids:)`` would): the caller hands them to an attached app right after.
    @discardableResult
    public func receive(from peer: String, items: [InboxItem], at time: Date, storingWhatFits: Bool = false,
                             handedOutFeatures: Set<String> = []) throws -> [InboxReceipt] {
        guard !items.isEmpty else { return [] }
        // Received items get the space reserve only while the inbox is empty. Otherwise an app's
        // ack of what is waiting makes room; with nothing waiting, none ever would: after the
        // last ack the reserve takes back the room a checkpoint gave, the WAL cannot grow, and
        // every resend of the sender would be refused for good (seen with a 3 MiB disk: 240 of
        // 400 items, then nothing for minutes).
        return try store.withConnectionFreeingSpace(onlyIf: { store.tallies.inbox.items == 0 }) { db in
            let operation = "store received items from peer \(peer)"
            var batch = StoreWriteBatch()
            let receipts = try db.transaction(operation) {
                var receipts: [InboxReceipt] = []
                receipts.reserveCapacity(items.count)
                for item in items {
                    do {
                        receipts.append(try insert(item, peer: peer, at: time, handedOut: handedOutFeatures.contains(item.featureID),
                                                        db: db, batch: &batch, operation: operation))
                    } catch let error as StoreError where storingWhatFits && !receipts.isEmpty && error.code == .full && error.isConfiguredLimit {
                        break    // checked before the insert: nothing of this item was written
                    }
                }
                return receipts
            }
            store.tallies.apply(batch)
            return receipts
        }
    }

    /// Remembers event IDs that reached an app by another path (e.g. realtime datagrams), so a
    /// queued copy is later reported as a duplicate. Returns, per ID, `true` when it was new.
    /// One transaction appending one row (`seen_batch`); these IDs are bounded by the same
    /// per-peer horizon, counted apart from the inbox's seen-set. With `lookUp` false an ID is
    /// checked against the realtime seen-set in memory only, not against the inbox and the
    /// stored rows (one query per ID): for callers that checked them already, an ID recorded
    /// twice only takes a second place within the horizon.
    public func recordSeen(from peer: String, eventIDs: [UUID], lookUp: Bool = true) throws -> [Bool] {
        guard !eventIDs.isEmpty else { return [] }
        return try store.withConnection { db in
            let operation = "remember event ids from peer \(peer)"
            let horizon = store.options.dedupHorizonPerPeer
            // One transaction for the lookups too: SQLite then takes its file locks once, not
            // once per probed ID.
            let (fresh, change) = try db.transaction(operation) { () throws -> ([Bool], SeenBatches.Change?) in
                var fresh: [Bool] = []
                fresh.reserveCapacity(eventIDs.count)
                var added: [UUID] = []
                var addedSet = EventIDSet(minimumCapacity: eventIDs.count)
                for eventID in eventIDs {
                    let known = try addedSet.contains(eventID)
                        || (lookUp ? isKnown(eventID, db: db, operation: operation) : store.seenBatches.contains(eventID))
                    fresh.append(!known)
                    if !known {
                        added.append(eventID)
                        addedSet.insert(eventID)
                    }
                }
                guard !added.isEmpty else { return (fresh, nil) }
                // (No local copy of `seenBatches`: `apply` below then mutates it without copying.)
                return (fresh, try store.seenBatches.record(added, peer: peer, horizon: horizon, db: db, operation: operation))
            }
            if let change { store.seenBatches.apply(change) }
            return fresh
        }
    }

    /// Whether `eventID` is in the inbox or the seen-set.
    public func hasSeen(eventID: UUID) throws -> Bool {
        try store.withConnection { db in try isKnown(eventID, db: db, operation: "look up event id") }
    }

    /// Unacknowledged items for `featureID` after `after`, in arrival order (so per-sender FIFO),
    /// at most `limit`. ``InboxEntry/isRedelivery`` tells which were handed out before.
    ///
    /// A row whose event or session ID was damaged in the file (altered behind our back) does
    /// not hold back the feature's queue: it is returned with ``StoreColumns/damagedID`` in
    /// place of that ID. Handing out needs neither (the app reads the envelope, IDs included,
    /// from the payload, and acks by inbox ID); ``InboxEntry/hasDamagedID`` tells the router to
    /// count and log it.
    public func pending(featureID: String, after: InboxID? = nil, limit: Int = 100) throws -> [InboxEntry] {
        try store.withConnection { db in
            try db.query("""
                SELECT \(Self.inboxEntryColumns) FROM inbox WHERE feature = ? AND id > ? ORDER BY id LIMIT ?
                """, [.text(featureID), .integer(after?.rawValue ?? 0), .integer(Int64(max(0, limit)))],
                "read inbox for feature \(featureID)", row: Self.inboxEntry)
        }
    }

    /// The first `limit` inbox items of any of `featureIDs` after `after`, in id order (the
    /// order they arrived in, across features: an attachment of several features gets each
    /// peer's items in the order they were sent). Ids come from the `(feature, id)` index per
    /// feature, merged; then the rows by id (``entries(ids:)``: an item acknowledged in
    /// between is left out).
    public func pending(featureIDs: [String], after: InboxID? = nil, limit: Int = 100) throws -> [InboxEntry] {
        let features = Array(Set(featureIDs)).sorted()
        guard features.count > 1 else {
            guard let only = features.first else { return [] }
            return try pending(featureID: only, after: after, limit: limit)
        }
        let ids = try store.withConnection { db in
            try features.flatMap { feature in
                try db.query("SELECT id FROM inbox WHERE feature = ? AND id > ? ORDER BY id LIMIT ?",
                             [.text(feature), .integer(after?.rawValue ?? 0), .integer(Int64(max(0, limit)))],
                             "read inbox for feature \(feature)") { InboxID(rawValue: $0.int64(0)) }
            }
        }
        return try entries(ids: Array(ids.sorted().prefix(max(0, limit))))
    }

    /// The unacknowledged items among `ids`, in id order (ids of acknowledged items are left
    /// out). For re-offering items a connection shed before its app saw them. Damaged IDs are
    /// read as in ``pending(featureID:after:limit:)``.
    public func entries(ids: [InboxID]) throws -> [InboxEntry] {
        guard !ids.isEmpty else { return [] }
        return try store.withConnection { db in
            let operation = "read inbox items by id"
            return try ids.compactMap { id throws -> InboxEntry? in
                try db.first("SELECT \(Self.inboxEntryColumns) FROM inbox WHERE id = ?", [.integer(id.rawValue)], operation,
                             row: Self.inboxEntry)
            }.sorted { $0.id.rawValue < $1.id.rawValue }
        }
    }

    /// The columns ``inboxEntry(_:)`` reads, in its order.
    private static let inboxEntryColumns =
        "id, peer, event_id, feature, session, kind, sender_sequence, payload, received_at, delivery_count"

    /// An inbox row selected with ``inboxEntryColumns``, damaged IDs read as ``StoreColumns/damagedID``.
    private static func inboxEntry(_ row: SQLiteStatement) -> InboxEntry {
        let eventID = StoreColumns.validUUID(row, 2), session = StoreColumns.optionalID(row, 4)
        let item = InboxItem(eventID: eventID ?? StoreColumns.damagedID, featureID: row.text(3), sessionID: session.idOrStandIn,
                             kind: UInt8(truncatingIfNeeded: row.int64(5)),
                             senderSequence: StoreColumns.unsigned(row, 6), payload: row.blob(7))
        return InboxEntry(id: InboxID(rawValue: row.int64(0)), peer: row.text(1), item: item,
                          receivedAt: StoreColumns.date(row, 8), deliveryCount: Int(row.int64(9)),
                          hasDamagedID: eventID == nil || session.isDamaged)
    }

    /// Items per hand-out record transaction.
    static let handOutRecordItems = 64

    /// Records that these items were handed to an app (delivery count + 1), in transactions of at
    /// most `handOutRecordItems` items: on a full disk each must fit in the space reserve
    /// (docs/STORE.md, "A WAL larger than the reserve"). When one fails, the parts before it stay
    /// recorded (their items count one delivery too many, nothing is lost). Call it before handing
    /// them out, so an app that dies before acking sees them as redeliveries.
    @discardableResult
    public func markDelivered(ids: [InboxID]) throws -> Int {
        // With the space reserve: items are handed to the app only after this record, and only
        // the app's ack can delete them, so on a full disk nothing could drain without it.
        var changed = 0
        for start in stride(from: 0, to: ids.count, by: Self.handOutRecordItems) {
            let part = ids[start..<min(ids.count, start + Self.handOutRecordItems)]
            changed += try store.withConnectionFreeingSpace { db in
                let operation = "mark inbox items delivered"
                return try db.transaction(operation) {
                    var changed = 0
                    for id in part {
                        try db.run("UPDATE inbox SET delivery_count = delivery_count + 1 WHERE id = ?", [.integer(id.rawValue)], operation)
                        changed += db.changes
                    }
                    return changed
                }
            }
        }
        return changed
    }

    /// The app acknowledged these items: deletes them and adds their event IDs to the seen-set
    /// (`acked_batch`, one row per sending peer), in one transaction. Returns how many were
    /// deleted; unknown ids are ignored.
    @discardableResult
    public func acknowledge(ids: [InboxID]) throws -> Int {
        try delete(ids: ids).count
    }

    /// As ``acknowledge(ids:)``, returning the ids that named an item. With `permits`,
    /// items whose feature it does not accept are left in the inbox (treated as unknown ids).
    public func delete(ids: [InboxID], permitting permits: ((String) -> Bool)? = nil) throws -> [InboxID] {
        guard !ids.isEmpty else { return [] }
        return try store.withConnectionFreeingSpace { db in
            let operation = "acknowledge inbox items"
            let (deleted, byPeer, changes) = try db.transaction(operation) {
                () throws -> ([(InboxID, Int)], [String: QueueTally], [SeenBatches.Change]) in
                var deleted: [(InboxID, Int)] = []
                var left: [(peer: String, eventID: UUID?)] = []
                var byPeer: [String: QueueTally] = [:]
                for id in ids {
                    // A lookup, then a plain delete: `DELETE … RETURNING` builds and drops an
                    // ephemeral table per statement (malloc growing and trimming the heap each
                    // time, ≈ 40 % of an ack's cost).
                    guard let (peer, eventID, feature, size) = try db.first(
                        "SELECT peer, event_id, feature, LENGTH(payload) FROM inbox WHERE id = ?", [.integer(id.rawValue)],
                        operation, row: { ($0.text(0), StoreColumns.validUUID($0, 1), $0.text(2), Int($0.int64(3))) })
                    else { continue }
                    if let permits, !permits(feature) { continue }
                    try db.run("DELETE FROM inbox WHERE id = ?", [.integer(id.rawValue)], operation)
                    deleted.append((id, size))
                    left.append((peer, eventID))
                    byPeer[peer, default: QueueTally()] = byPeer[peer, default: QueueTally()] + QueueTally(items: 1, bytes: size)
                }
                return (deleted, byPeer, try rememberLeft(left, db: db, operation: operation))
            }
            for change in changes { store.ackedBatches.apply(change) }
            for (peer, removed) in byPeer { store.tallies.addInbox(peer: peer, QueueTally() - removed) }
            store.tallies.inbox = store.tallies.inbox - QueueTally(items: deleted.count, bytes: deleted.reduce(0) { $0 + $1.1 })
            return deleted.map(\.0)
        }
    }

    /// Adds the event IDs of items that left the inbox in the open transaction (an app's ack,
    /// an unpair) to the seen-set's `acked_batch` part: one row per peer, in the order given.
    /// Remembered once: an ID already there (e.g. moved there from an older file) would only
    /// take a second place in the horizon. A damaged ID (nil: not 16 bytes) cannot match
    /// anything and is skipped. Apply the changes once the transaction committed.
    func rememberLeft(_ left: [(peer: String, eventID: UUID?)], db: SQLiteConnection,
                           operation: String) throws -> [SeenBatches.Change] {
        var peers: [String] = []
        var byPeer: [String: [UUID]] = [:]
        var taken: Set<UUID> = []
        for (peer, eventID) in left {
            guard let eventID, !store.ackedBatches.contains(eventID), taken.insert(eventID).inserted else { continue }
            if byPeer[peer] == nil { peers.append(peer) }
            byPeer[peer, default: []].append(eventID)
        }
        return try peers.map { peer in
            try store.ackedBatches.record(byPeer[peer] ?? [], peer: peer, horizon: store.options.dedupHorizonPerPeer, db: db,
                                          operation: operation)
        }
    }

    /// In the seen-set (both parts, in memory) or in the inbox (its unique index).
    private func isKnown(_ eventID: UUID, db: SQLiteConnection, operation: String) throws -> Bool {
        if isRemembered(eventID) { return true }
        return try db.first("SELECT 1 FROM inbox WHERE event_id = ?", [.blob(StoreColumns.blob(eventID))], operation) { _ in true }
            ?? false
    }

    /// Whether the seen-set (in memory) holds `eventID`: delivered live, or acknowledged.
    private func isRemembered(_ eventID: UUID) -> Bool {
        store.seenBatches.contains(eventID) || store.ackedBatches.contains(eventID)
    }

    /// Stores one received item inside an open transaction, or reports it as a duplicate.
    /// `handedOut`: the item goes to an attached app right after this transaction, which
    /// records that delivery with it (`delivery_count` 1) instead of in one of its own.
    func insert(_ item: InboxItem, peer: String, at time: Date, handedOut: Bool = false, db: SQLiteConnection,
                     batch: inout StoreWriteBatch, operation: String) throws -> InboxReceipt {
        if isRemembered(item.eventID) { return .duplicate }
        let eventID = StoreColumns.blob(item.eventID)
        let one = QueueTally(items: 1, bytes: item.payload.count)
        let grown = batch.inboxAdded + one
        let peerGrown = (batch.inboxAddedByPeer[peer] ?? QueueTally()) + one
        do {
            try checkLimits(adding: grown, peer: peer, peerAdding: peerGrown, operation: operation)
        } catch {
            // A duplicate is reported as one, full or not (the sender may then delete it).
            if try isKnown(item.eventID, db: db, operation: operation) { return .duplicate }
            throw error
        }
        // One statement for the common case, a new event: the inbox's unique index on event_id
        // finds a duplicate still waiting for its app. A lookup before every insert cost
        // ≈ 15 % of the insert.
        try db.run("""
            INSERT INTO inbox (peer, event_id, feature, session, kind, sender_sequence, payload, received_at, delivery_count)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (event_id) DO NOTHING
            """, [.text(peer), .blob(eventID), .text(item.featureID), StoreColumns.value(item.sessionID),
                  .integer(Int64(item.kind)),
                  try StoreColumns.integer(item.senderSequence, name: "sender sequence", operation: operation, path: store.path),
                  .blob(item.payload), StoreColumns.value(time), .integer(handedOut ? 1 : 0)], operation)
        guard db.changes > 0 else { return .duplicate }
        let id = InboxID(rawValue: db.lastInsertRowID)
        batch.inboxAdded = grown
        batch.inboxAddedByPeer[peer] = peerGrown
        return .stored(id)
    }

    /// Throws `.full` for the first limit the batch's additions would pass: the inbox as a
    /// whole, then the sending peer's share of it.
    private func checkLimits(adding: QueueTally, peer: String, peerAdding: QueueTally, operation: String) throws {
        let options = store.options    // plain integers: a copy costs nothing
        let total = store.tallies.inbox + adding
        let held = store.tallies.inboxByPeer[peer] ?? QueueTally()
        let share = held + peerAdding
        let limit: StoreLimit? =
            if total.items > options.maxInboxItems { .inboxItems(options.maxInboxItems) }
            else if total.bytes > options.maxInboxBytes { .inboxBytes(options.maxInboxBytes) }
            else if share.items > options.maxInboxItemsPerPeer { .inboxItemsPerPeer(options.maxInboxItemsPerPeer) }
            else if share.bytes > options.maxInboxBytesPerPeer { .inboxBytesPerPeer(options.maxInboxBytesPerPeer) }
            else { nil }
        if let limit {
            let detail = limit.configKey?.hasSuffix("_per_peer") == true
                ? "this peer's share of the inbox is full (\(held.items) items, \(held.bytes) bytes from it waiting for apps)"
                : "the inbox is full (\(store.tallies.inbox.items) items, \(store.tallies.inbox.bytes) bytes waiting for apps)"
            throw StoreError(code: .full, operation: operation, path: store.path, limit: limit, detail: detail)
        }
    }
}
