/// In-memory counters of what the store holds, so limits cost no `COUNT(*)` per write.
///
/// Loaded from the tables when the store opens; updated only after a transaction commits, so
/// a rolled-back write never skews them.
struct StoreTallies {
    var outboxByPeer: [String: QueueTally] = [:]
    var outbox = QueueTally()
    /// Outbox items and bytes per owning local uid (rows without an owner count toward none).
    var outboxByUID: [UInt32: QueueTally] = [:]
    /// Outbound snapshot slots (items) and their bytes per owning local uid.
    var outboundSlotsByUID: [UInt32: QueueTally] = [:]
    /// This device's session rows and timer anchors per owning local uid.
    var sessionsByUID: [UInt32: Int] = [:]
    var anchorsByUID: [UInt32: Int] = [:]
    var inbox = QueueTally()
    /// Inbox items and bytes per sending peer (their sum is `inbox`).
    var inboxByPeer: [String: QueueTally] = [:]
    var lastSequence: [String: UInt64] = [:]
    /// What each peer grew (slots, session rows, anchors) and the sum over all peers.
    var peerState: [String: PeerStateTally] = [:]
    var peerStateTotal = PeerStateTally()

    static func load(from db: SQLiteConnection) throws -> StoreTallies {
        var tallies = StoreTallies()
        let operation = "load queue counters"
        for (peer, tally) in try db.query(
            "SELECT peer, COUNT(*), COALESCE(SUM(LENGTH(payload)), 0) FROM outbox GROUP BY peer", [], operation,
            row: { ($0.text(0), QueueTally(items: Int($0.int64(1)), bytes: Int($0.int64(2)))) }) {
            tallies.outboxByPeer[peer] = tally
            tallies.outbox = tallies.outbox + tally
        }
        for (uid, tally) in try db.query(
            "SELECT owner_uid, COUNT(*), COALESCE(SUM(LENGTH(payload)), 0) FROM outbox WHERE owner_uid IS NOT NULL GROUP BY owner_uid",
            [], operation, row: { ($0.int64(0), QueueTally(items: Int($0.int64(1)), bytes: Int($0.int64(2)))) }) {
            // A value no uid has (altered file) is a row of no uid.
            if let uid = UInt32(exactly: uid) { tallies.outboxByUID[uid] = tally }
        }
        for (uid, tally) in try db.query(
            "SELECT owner_uid, COUNT(*), COALESCE(SUM(LENGTH(bytes)), 0) FROM outbound_slot WHERE owner_uid IS NOT NULL GROUP BY owner_uid",
            [], operation, row: { ($0.int64(0), QueueTally(items: Int($0.int64(1)), bytes: Int($0.int64(2)))) }) {
            if let uid = UInt32(exactly: uid) { tallies.outboundSlotsByUID[uid] = tally }
        }
        tallies.sessionsByUID = try countByUID("session_directory", db)
        tallies.anchorsByUID = try countByUID("timer_anchor", db)
        tallies.inbox = try db.first("SELECT COUNT(*), COALESCE(SUM(LENGTH(payload)), 0) FROM inbox", [], operation) {
            QueueTally(items: Int($0.int64(0)), bytes: Int($0.int64(1)))
        } ?? QueueTally()
        for (peer, tally) in try db.query(
            "SELECT peer, COUNT(*), COALESCE(SUM(LENGTH(payload)), 0) FROM inbox GROUP BY peer", [], operation,
            row: { ($0.text(0), QueueTally(items: Int($0.int64(1)), bytes: Int($0.int64(2)))) }) {
            tallies.inboxByPeer[peer] = tally
        }
        for (peer, last) in try db.query("SELECT peer, last_sequence FROM outbox_peer", [], operation,
                                         row: { ($0.text(0), UInt64(clamping: $0.int64(1))) }) {
            // Never below an item still queued: `StoreOpener` raised damaged or lowered counters.
            tallies.lastSequence[peer] = last
        }
        tallies.peerState = try PeerStateTally.load(from: db)
        tallies.peerStateTotal = tallies.peerState.values.reduce(PeerStateTally(), +)
        return tallies
    }

    /// Adds `delta` to `peer`'s state tally and the total (after a commit).
    mutating func addPeerState(_ peer: String, _ delta: PeerStateTally) {
        peerState[peer, default: PeerStateTally()] = peerState[peer, default: PeerStateTally()] + delta
        peerStateTotal = peerStateTotal + delta
        if peerState[peer] == PeerStateTally() { peerState[peer] = nil }
    }

    /// Forgets `peer`'s state tally (its rows were deleted).
    mutating func removePeerState(_ peer: String) {
        if let tally = peerState.removeValue(forKey: peer) { peerStateTotal = peerStateTotal - tally }
    }

    mutating func addOutbox(peer: String, _ delta: QueueTally) {
        outboxByPeer[peer, default: QueueTally()] = outboxByPeer[peer, default: QueueTally()] + delta
        outbox = outbox + delta
        if outboxByPeer[peer]?.items == 0 { outboxByPeer[peer] = nil }
    }

    /// Adds `delta` to `peer`'s inbox tally (not to the total: callers keep `inbox` themselves).
    mutating func addInbox(peer: String, _ delta: QueueTally) {
        inboxByPeer[peer, default: QueueTally()] = inboxByPeer[peer, default: QueueTally()] + delta
        if inboxByPeer[peer]?.items ?? 0 <= 0 { inboxByPeer[peer] = nil }
    }

    mutating func removeOutbox(peer: String, _ delta: QueueTally) {
        addOutbox(peer: peer, QueueTally() - delta)
    }

    /// Adds `delta` to `uid`'s share of the outbox (nil: a row of no uid, not tallied).
    mutating func addOutbox(uid: UInt32?, _ delta: QueueTally) {
        guard let uid else { return }
        outboxByUID[uid, default: QueueTally()] = outboxByUID[uid, default: QueueTally()] + delta
        if outboxByUID[uid]?.items ?? 0 <= 0 { outboxByUID[uid] = nil }
    }

    /// Adds `delta` to `uid`'s outbound slots (nil: a slot of no uid, not tallied).
    mutating func addOutboundSlots(uid: UInt32?, _ delta: QueueTally) {
        guard let uid else { return }
        outboundSlotsByUID[uid, default: QueueTally()] = outboundSlotsByUID[uid, default: QueueTally()] + delta
        if outboundSlotsByUID[uid]?.items ?? 0 <= 0 { outboundSlotsByUID[uid] = nil }
    }

    /// The rows of `table` per owning uid (a value no uid has, from an altered file, is a row of no uid).
    private static func countByUID(_ table: String, _ db: SQLiteConnection) throws -> [UInt32: Int] {
        var counts: [UInt32: Int] = [:]
        for (uid, count) in try db.query("SELECT owner_uid, COUNT(*) FROM \(table) WHERE owner_uid IS NOT NULL GROUP BY owner_uid",
                                         [], "load queue counters", row: { ($0.int64(0), Int($0.int64(1))) }) {
            if let uid = UInt32(exactly: uid) { counts[uid] = count }
        }
        return counts
    }

    /// Adds `delta` rows to `uid`'s count in `counts` (nil: rows of no uid, not tallied).
    static func add(_ delta: Int, uid: UInt32?, to counts: inout [UInt32: Int]) {
        guard let uid else { return }
        counts[uid, default: 0] += delta
        if counts[uid] ?? 0 <= 0 { counts[uid] = nil }
    }

    /// Takes deleted rows (by owning uid) off the uids' shares.
    mutating func removeOutbox(byUID removed: [UInt32: QueueTally]) {
        for (uid, tally) in removed { addOutbox(uid: uid, QueueTally() - tally) }
    }
}
