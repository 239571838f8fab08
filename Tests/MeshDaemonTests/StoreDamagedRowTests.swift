import Foundation
import Testing
@testable import MeshDaemon

/// Rows whose IDs were damaged in the state file behind the daemon's back (a value of the wrong
/// type or size, which `quick_check` does not see): they neither stop a queue nor fail a list.
@Suite("Rows damaged in the state file")
struct StoreDamagedRowTests {
    /// Inbox rows whose event or session ID was damaged in the file are still read, in arrival
    /// order with the others, flagged and with the all-zero ID in place of the damaged one
    /// (before: reading the page threw `.corrupt` and the whole feature's queue stopped there).
    @Test func aDamagedIDInTheInboxDoesNotHoldBackTheItemsAfterIt() throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        let store = try DeliveryStore.open(path: dir.path())
        defer { store.close() }
        let session = UUID()
        var items = (0..<5).map { makeInboxItem($0) }
        items[3].sessionID = session
        items[4].sessionID = session
        try store.inbox.receive(from: "P", items: items, at: storeTestEpoch)
        try dir.alter([
            ("UPDATE inbox SET event_id = ? WHERE event_id = ?", [.blob([9, 9]), .blob(StoreColumns.blob(items[1].eventID))]),
            ("UPDATE inbox SET session = ? WHERE event_id = ?", [.text("garbage"), .blob(StoreColumns.blob(items[3].eventID))]),
        ])
        let page = try store.inbox.pending(featureID: "demo", limit: 10)
        #expect(page.map(\.item.payload) == items.map(\.payload), "all five, in arrival order")
        #expect(page.map(\.hasDamagedID) == [false, true, false, true, false])
        #expect(page[1].item.eventID == StoreColumns.damagedID && page[1].item.sessionID == nil)
        #expect(page[3].item.eventID == items[3].eventID && page[3].item.sessionID == StoreColumns.damagedID)
        #expect(page[4].item.sessionID == session)
        #expect(page[0].item.eventID == items[0].eventID && page[2].item.eventID == items[2].eventID)
        #expect(try store.inbox.entries(ids: [page[3].id, page[1].id]).map(\.hasDamagedID) == [true, true])
        #expect(try store.inbox.acknowledge(ids: page.map(\.id)) == 5)
        #expect(try store.counts().inbox.items == 0)
        #expect(try !store.inbox.hasSeen(eventID: StoreColumns.damagedID), "the stand-in ID is never remembered")
        #expect(try store.inbox.hasSeen(eventID: items[3].eventID))
    }

    /// Outbox rows whose event or session ID was damaged in the file are repaired where the
    /// pump reads them: a fresh event ID (kept: the next read returns the same one), no session;
    /// the rows around them are untouched, and `outbox.list` lists them meanwhile.
    @Test func aDamagedIDInTheOutboxIsRepairedWhereItIsRead() throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        let store = try DeliveryStore.open(path: dir.path())
        defer { store.close() }
        let session = UUID()
        let items = (0..<4).map { index in
            OutboxItem(eventID: UUID(), featureID: "demo", sessionID: session, kind: 2, payload: [UInt8(index)],
                       createdAt: storeTestEpoch)
        }
        for item in items { _ = try store.outbox.enqueue(peer: "P", item: item) }
        try dir.alter([
            ("UPDATE outbox SET event_id = ? WHERE event_id = ?", [.blob([1, 2, 3]), .blob(StoreColumns.blob(items[1].eventID))]),
            ("UPDATE outbox SET session = ? WHERE event_id = ?", [.integer(5), .blob(StoreColumns.blob(items[2].eventID))]),
        ])
        #expect(try store.outbox.list().map(\.eventID) == [items[0].eventID, StoreColumns.damagedID, items[2].eventID, items[3].eventID])
        let first = try store.outbox.pending(peer: "P", limit: 10)
        #expect(first.map(\.item.payload) == items.map(\.payload))
        #expect(first.map(\.repairedID) == [false, true, true, false])
        let fresh = first[1].item.eventID
        #expect(fresh != items[1].eventID && fresh != StoreColumns.damagedID)
        #expect(first[2].item.eventID == items[2].eventID && first[2].item.sessionID == nil)
        #expect(first[0].item.sessionID == session && first[3].item.sessionID == session)
        let again = try store.outbox.pending(peer: "P", limit: 10)
        #expect(again.map(\.repairedID) == [false, false, false, false])
        #expect(again.map(\.item.eventID) == first.map(\.item.eventID), "the repair was stored")
        #expect(try store.outbox.acknowledge(peer: "P", upTo: again[3].sequence) == 4)
        #expect(try store.counts().outbox.items == 0)
    }

    /// Keyed rows (sessions, timer anchors, watermarks, snapshot slots) whose session key was
    /// damaged in the file cannot be addressed: every list leaves them out and returns the rest,
    /// and reopening works (before: one such row failed the whole list — the activation push of
    /// all outbound slots, the session directory, the watermarks the router loads at start).
    @Test func keyedRowsWithADamagedSessionKeyAreLeftOutOfLists() throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        var store = try DeliveryStore.open(path: dir.path())
        let good = UUID()
        #expect(try store.sessions.put(SessionRecord(sessionID: good, featureID: "demo", owner: "me", status: "running",
                                                   updatedAt: storeTestEpoch, revision: 1, sourcePeer: nil)))
        #expect(try store.sessions.putTimerAnchor(featureID: "demo", sessionID: good, revision: 1, bytes: [1], at: storeTestEpoch) == .stored)
        #expect(try store.peers.putWatermark(WatermarkRecord(peer: "P", sessionID: good, direction: .received, featureID: "demo",
                                                       sequence: 3, updatedAt: storeTestEpoch)))
        #expect(try store.slots.putOutbound(featureID: "demo", sessionID: good, revision: 2, bytes: [2], at: storeTestEpoch))
        #expect(try store.slots.putOutbound(featureID: "other", revision: 1, bytes: [9], at: storeTestEpoch))
        #expect(try store.slots.putInbound(peer: "P", featureID: "demo", sessionID: good, revision: 4, bytes: [4], at: storeTestEpoch) == .stored)
        store.close()
        let bad: SQLiteValue = .blob([1, 2, 3])
        try dir.alter([
            ("INSERT INTO session_directory (feature, session_id, owner, status, updated_at, revision, source_peer) "
             + "VALUES ('demo', ?, 'x', 'running', 0, 1, NULL)", [bad]),
            ("INSERT INTO timer_anchor (feature, session_id, source_peer, revision, bytes, updated_at) "
             + "VALUES ('demo', ?, '', 1, x'00', 0)", [bad]),
            ("INSERT INTO watermark VALUES ('P', 'demo', ?, 1, 9, 0)", [bad]),
            ("INSERT INTO outbound_slot (feature, session, revision, bytes, updated_at) VALUES ('demo', ?, 1, x'00', 0)", [bad]),
            ("INSERT INTO inbound_slot VALUES ('P', 'demo', ?, 1, x'00', 0)", [.text("not a session")]),
        ])
        store = try DeliveryStore.open(path: dir.path())
        defer { store.close() }
        #expect(try store.sessions.list().map(\.sessionID) == [good])
        #expect(try store.sessions.listTimerAnchors().map(\.sessionID) == [good])
        #expect(try store.peers.watermarks().map(\.sessionID) == [good])
        #expect(try store.slots.listOutbound().map(\.featureID) == ["demo", "other"])
        #expect(try store.slots.listOutbound().map(\.sessionID) == [good, nil])
        #expect(try store.slots.listInbound().map(\.sessionID) == [good])
    }

    /// A peer's sequence counter at the largest storable value (2⁶³ − 1, only a damaged file has
    /// one) fails that peer's sends with the table, row and file named, never traps, and leaves
    /// the other peers' queues working.
    @Test func aSequenceCounterAtItsMaximumFailsThatPeersSendsClearly() throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        var store = try DeliveryStore.open(path: dir.path())
        _ = try store.outbox.enqueue(peer: "A", item: makeOutboxItem(1))
        store.close()
        // Also a damaged sequence in a row of A's queue: moving it behind the counter has no room.
        try dir.alter([("UPDATE outbox_peer SET last_sequence = 9223372036854775807 WHERE peer = 'A'", []),
                       ("INSERT INTO outbox (peer, sequence, event_id, feature, kind, payload, created_at) "
                        + "VALUES ('A', 'x', x'00112233445566778899AABBCCDDEEFF', 'demo', 1, x'00', 0)", [])])
        store = try DeliveryStore.open(path: dir.path())
        defer { store.close() }
        let error = #expect(throws: StoreError.self) { try store.outbox.enqueue(peer: "A", item: makeOutboxItem(2)) }
        #expect(error?.code == .corrupt)
        #expect(error?.description.contains(dir.path()) == true, "\(String(describing: error))")
        #expect(error?.detail.contains("outbox_peer, row of peer A: last_sequence is 9223372036854775807") == true)
        #expect(try store.outbox.pending(peer: "A", limit: 10).count == 1, "the queued item stays")
        #expect(try store.outbox.list(peer: "A").count == 2, "the damaged row stays as it was")
        #expect(try store.outbox.enqueue(peer: "B", item: makeOutboxItem(3)).sequence == 1)
    }

    /// A peer's sequence counter (`outbox_peer`) damaged or lowered in the file never hands out a
    /// sequence an item still queued has: the next send follows the highest queued one (before:
    /// the insert hit `UNIQUE (peer, sequence)` and every send to that peer failed).
    @Test func aDamagedSequenceCounterDoesNotCollideWithQueuedItems() throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        var store = try DeliveryStore.open(path: dir.path())
        for index in 0..<3 { _ = try store.outbox.enqueue(peer: "P", item: makeOutboxItem(index)) }
        for index in 8..<10 { _ = try store.outbox.enqueue(peer: "Q", item: makeOutboxItem(index)) }
        store.close()
        try dir.alter([
            ("UPDATE outbox_peer SET last_sequence = 'garbage' WHERE peer = 'P'", []),
            ("UPDATE outbox_peer SET last_sequence = 1 WHERE peer = 'Q'", []),
        ])
        store = try DeliveryStore.open(path: dir.path())
        defer { store.close() }
        #expect(try store.outbox.enqueue(peer: "P", item: makeOutboxItem(3)).sequence == 4)
        #expect(try store.outbox.enqueue(peer: "Q", item: makeOutboxItem(10)).sequence == 3)
        #expect(try store.outbox.pending(peer: "P", limit: 10).map(\.sequence) == [1, 2, 3, 4])
        #expect(try store.outbox.pending(peer: "P", limit: 10).map(\.item.payload) == (0..<4).map { makeOutboxItem($0).payload })
    }

    /// Outbox rows whose sequence was damaged (text) or made non-positive in the file move to
    /// the end of their peer's queue when the store opens: sent after the others, not deleted
    /// by an ack that never covered them (before: a text sequence was resent at every pump and
    /// never deleted; a negative one was never sent and went with the next ack).
    @Test func outboxRowsWithADamagedSequenceMoveToTheEndOfTheQueue() throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        var store = try DeliveryStore.open(path: dir.path())
        for index in 0..<4 { _ = try store.outbox.enqueue(peer: "P", item: makeOutboxItem(index)) }
        _ = try store.outbox.enqueue(peer: "Q", item: makeOutboxItem(7))
        store.close()
        try dir.alter([
            ("UPDATE outbox SET sequence = 'x' WHERE peer = 'P' AND sequence = 2", []),
            ("UPDATE outbox SET sequence = -5 WHERE peer = 'P' AND sequence = 3", []),
        ])
        store = try DeliveryStore.open(path: dir.path())
        let pending = try store.outbox.pending(peer: "P", limit: 10)
        #expect(pending.map(\.sequence) == [1, 4, 5, 6])
        #expect(pending.map(\.item.payload) == [0, 3, 1, 2].map { makeOutboxItem($0).payload })
        #expect(try store.outbox.pending(peer: "Q", limit: 10).map(\.sequence) == [1], "other peers untouched")
        #expect(try store.outbox.enqueue(peer: "P", item: makeOutboxItem(4)).sequence == 7)
        #expect(try store.outbox.acknowledge(peer: "P", upTo: 4) == 2, "the moved rows wait for their own ack")
        store.close()
        store = try DeliveryStore.open(path: dir.path())
        defer { store.close() }
        #expect(try store.outbox.pending(peer: "P", limit: 10).map(\.sequence) == [5, 6, 7], "a clean file is left as it is")
    }
}
