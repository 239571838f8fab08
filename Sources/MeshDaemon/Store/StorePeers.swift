/// Per-peer state of a ``DeliveryStore`` (`store.peers`): delivery watermarks, and forgetting
/// a peer when it is unpaired, across every table.
///
/// A view of the store: it runs on the store's connection under the store's lock, and keeps
/// the store's tallies and seen-sets in memory in step after each commit.
public struct StorePeers: Sendable {
    let store: DeliveryStore

    /// Deletes everything held for or from `peer` in one transaction: its outbox, its
    /// unacknowledged inbox items, its inbound snapshot slots, the session rows learned from it,
    /// the timer anchors it sent and the watermarks exchanged with it.
    ///
    /// Kept on purpose: the peer's sequence counter (sequences never repeat for a device ID) and
    /// its remembered event IDs (so items it still has queued are not delivered twice if it is
    /// paired again); both are small and bounded.
    @discardableResult
    public func drop(_ peer: String) throws -> PeerDropSummary {
        try store.withConnectionFreeingSpace { db in
            let operation = "forget peer \(peer)"
            let (outbox, inbox, slots, sessions, anchors, remembered) = try db.transaction(operation) {
                let outbox = try db.query("DELETE FROM outbox WHERE peer = ? RETURNING LENGTH(payload), owner_uid", [.text(peer)],
                                          operation) { (size: Int($0.int64(0)), uid: StoreColumns.ownerUID($0, 1)) }
                let dropped = try db.query("SELECT event_id, LENGTH(payload) FROM inbox WHERE peer = ? ORDER BY id", [.text(peer)],
                                           operation) { (StoreColumns.validUUID($0, 0), Int($0.int64(1))) }
                try db.run("DELETE FROM inbox WHERE peer = ?", [.text(peer)], operation)
                // Their IDs join the acknowledged ones, as an app's ack would have put them.
                let remembered = try store.inbox.rememberLeft(dropped.map { (peer, $0.0) }, db: db, operation: operation)
                let inbox = dropped.map(\.1)
                try db.run("DELETE FROM inbound_slot WHERE peer = ?", [.text(peer)], operation)
                let slots = db.changes
                try db.run("DELETE FROM session_directory WHERE source_peer = ?", [.text(peer)], operation)
                let sessions = db.changes
                try db.run("DELETE FROM timer_anchor WHERE source_peer = ?", [.text(peer)], operation)
                let anchors = db.changes
                try db.run("DELETE FROM watermark WHERE peer = ?", [.text(peer)], operation)
                return (outbox, inbox, slots, sessions, anchors, remembered)
            }
            for change in remembered { store.ackedBatches.apply(change) }
            store.tallies.removeOutbox(peer: peer, QueueTally(items: outbox.count, bytes: outbox.reduce(0) { $0 + $1.size }))
            store.tallies.removeOutbox(byUID: StoreOutbox.byUID(outbox))
            store.tallies.inbox = store.tallies.inbox - QueueTally(items: inbox.count, bytes: inbox.reduce(0, +))
            store.tallies.inboxByPeer[peer] = nil
            store.tallies.removePeerState(peer)
            return PeerDropSummary(outboxItems: outbox.count, inboxItems: inbox.count, inboundSlots: slots, sessions: sessions,
                                   anchors: anchors)
        }
    }
}
