import Foundation
import SessionMesh
import Testing
@testable import MeshDaemon

/// Sessions, anchors and watermarks keyed by (feature, session), a peer's rows in its own
/// lane, the limits of what peers can make the store hold, and the migration of version-5 files.
@Suite("DeliveryStore lanes and peer limits")
struct StoreLaneTests {
    static func row(_ feature: String, _ id: UUID, revision: UInt64, status: String = "running",
                    source: String? = nil) -> SessionRecord {
        SessionRecord(sessionID: id, featureID: feature, owner: "o", status: status, updatedAt: storeTestEpoch,
                      revision: revision, sourcePeer: source)
    }

    @Test func aSessionIDInTwoFeaturesIsTwoRowsAndAPeerNeverReplacesAnotherSendersRow() throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        let store = try DeliveryStore.open(path: dir.path())
        defer { store.close() }
        let id = UUID()
        #expect(try store.sessions.put(Self.row("b", id, revision: 1)))
        // Closing (a, id) never touches (b, id).
        #expect(try store.sessions.put(Self.row("a", id, revision: 5, status: "closed")))
        #expect(try store.sessions.record(featureID: "b", id: id)?.status == "running")
        #expect(try store.sessions.features(of: id) == ["a", "b"])
        // A peer's row for this device's (b, id): refused, whatever its revision.
        #expect(try store.sessions.putFromPeer(Self.row("b", id, revision: 99, status: "closed", source: "P")) == .notOwned)
        #expect(try store.sessions.record(featureID: "b", id: id)?.status == "running")
        #expect(try store.sessions.record(featureID: "b", id: id)?.sourcePeer == nil)
        // P's own row: P may raise it; Q may not replace it.
        let other = UUID()
        #expect(try store.sessions.putFromPeer(Self.row("b", other, revision: 1, source: "P")) == .stored)
        #expect(try store.sessions.putFromPeer(Self.row("b", other, revision: 2, source: "P")) == .stored)
        #expect(try store.sessions.putFromPeer(Self.row("b", other, revision: 1, source: "P")) == .stale)
        #expect(try store.sessions.putFromPeer(Self.row("b", other, revision: 9, status: "closed", source: "Q")) == .notOwned)
        #expect(try store.sessions.record(featureID: "b", id: other)?.sourcePeer == "P")
        // This device may close a peer's row (its local user's choice): the row becomes its own.
        #expect(try store.sessions.put(Self.row("b", other, revision: 3, status: "closed")))
        #expect(try store.sessions.record(featureID: "b", id: other)?.sourcePeer == nil)
        #expect(store.tallies.peerState["P"] == nil, "the row no longer counts against P")
    }

    @Test func anchorsAreKeptPerSenderAndOnlyThisDevicesAreListedForResending() throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        let store = try DeliveryStore.open(path: dir.path())
        defer { store.close() }
        let id = UUID()
        #expect(try store.sessions.putTimerAnchor(featureID: "a", sessionID: id, revision: 2, bytes: [2], at: storeTestEpoch) == .stored)
        #expect(try store.sessions.putTimerAnchor(featureID: "a", sessionID: id, from: "P", revision: 9, bytes: [9],
                                                  at: storeTestEpoch) == .stored, "P's anchor goes in P's row")
        #expect(try store.sessions.timerAnchor(featureID: "a", sessionID: id)?.bytes == [2], "this device's anchor stays")
        #expect(try store.sessions.putTimerAnchor(featureID: "b", sessionID: id, revision: 1, bytes: [1], at: storeTestEpoch) == .stored)
        #expect(try store.sessions.listTimerAnchors(localOnly: true).map(\.featureID) == ["a", "b"])
        #expect(try store.sessions.listTimerAnchors().count == 3)
    }

    @Test func aPeerHittingItsLimitsIsRefusedAndOthersStillFit() throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        let limits = PeerStateLimits(slotsPerPeer: 3, slotBytesPerPeer: 2048, slots: 5, slotBytes: 1 << 20,
                                     sessionsPerPeer: 2, sessions: 3, anchorsPerPeer: 2, anchors: 3)
        var store = try DeliveryStore.open(path: dir.path(), options: DeliveryStoreOptions(peerState: limits))
        var refused: [StoreLimit] = []
        func note(_ result: StorePutResult) { if case .refused(let limit) = result { refused.append(limit) } }
        for index in 0..<10 {
            let id = UUID()
            note(try store.slots.putInbound(peer: "P", featureID: "f", sessionID: id, revision: 1, bytes: [1], at: storeTestEpoch))
            note(try store.sessions.putFromPeer(Self.row("f", id, revision: 1, source: "P")))
            note(try store.sessions.putTimerAnchor(featureID: "f", sessionID: id, from: "P", revision: 1, bytes: [UInt8(index)],
                                                   at: storeTestEpoch))
        }
        #expect(refused.filter { $0 == .inboundSlotsPerPeer(3) }.count == 7)
        #expect(refused.filter { $0 == .inboundSessionsPerPeer(2) }.count == 8)
        #expect(refused.filter { $0 == .inboundAnchorsPerPeer(2) }.count == 8)
        #expect(try store.slots.listInbound(peer: "P").count == 3)
        // A replacement of a stored slot still fits; one past the byte share does not.
        let kept = try #require(try store.slots.listInbound(peer: "P").first)
        #expect(try store.slots.putInbound(peer: "P", featureID: "f", sessionID: kept.sessionID, revision: 2, bytes: [2],
                                           at: storeTestEpoch) == .stored)
        #expect(try store.slots.putInbound(peer: "P", featureID: "f", sessionID: kept.sessionID, revision: 3,
                                           bytes: [UInt8](repeating: 0, count: 4096), at: storeTestEpoch)
                == .refused(.inboundSlotBytesPerPeer(2048)))
        // Another peer has its own share, up to the total.
        #expect(try store.slots.putInbound(peer: "Q", featureID: "f", revision: 1, bytes: [1], at: storeTestEpoch) == .stored)
        #expect(try store.slots.putInbound(peer: "Q", featureID: "g", revision: 1, bytes: [1], at: storeTestEpoch) == .stored)
        #expect(try store.slots.putInbound(peer: "Q", featureID: "h", revision: 1, bytes: [1], at: storeTestEpoch)
                == .refused(.inboundSlotsTotal(5)))
        #expect(try store.sessions.putFromPeer(Self.row("f", UUID(), revision: 1, source: "Q")) == .stored)
        #expect(try store.sessions.putFromPeer(Self.row("f", UUID(), revision: 1, source: "Q")) == .refused(.inboundSessionsTotal(3)))
        // The counts survive a reopen (read from the tables), and an unpair frees the share.
        store.close()
        store = try DeliveryStore.open(path: dir.path(), options: DeliveryStoreOptions(peerState: limits))
        defer { store.close() }
        #expect(try store.slots.putInbound(peer: "P", featureID: "z", revision: 1, bytes: [1], at: storeTestEpoch)
                == .refused(.inboundSlotsPerPeer(3)))
        let dropped = try store.peers.drop("P")
        #expect(dropped.inboundSlots == 3 && dropped.sessions == 2 && dropped.anchors == 2)
        #expect(try store.slots.putInbound(peer: "P", featureID: "z", revision: 1, bytes: [1], at: storeTestEpoch) == .stored)
        #expect(store.tallies.peerState["P"] == PeerStateTally(slots: 1, slotBytes: 1))
        print("store figure: peer limits refused \(refused.count) of 30 writes (slots 7, sessions 8, anchors 8)")
    }

    /// A version-5 file: its sessions, anchors and watermarks survive version 6; an anchor takes
    /// its feature from its record and its sender from the session's directory row.
    @Test func aVersionFiveFileKeepsItsSessionsAnchorsAndWatermarks() throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        var store = try DeliveryStore.open(path: dir.path())
        store.close()
        let mine = UUID(), theirs = UUID()
        let anchor = { (id: UUID) in
            DeliveryAnchorRecord(sessionID: id, featureID: "timer", revision: 3,
                                 anchor: SessionTimerAnchor(startedAt: Date(timeIntervalSince1970: 5))).encoded()
        }
        let raw = try SQLiteConnection(path: dir.path(), busyTimeoutMilliseconds: 100)
        try undoSchemaVersion6(raw)
        for (id, source) in [(mine, SQLiteValue.null), (theirs, .text("P"))] {
            try raw.run("INSERT INTO session_directory VALUES (?, 'timer', 'o', 'running', 1, 2, ?)",
                        [.blob(StoreColumns.blob(id)), source], "test setup")
            try raw.run("INSERT INTO timer_anchor VALUES (?, 3, ?, 1)", [.blob(StoreColumns.blob(id)), .blob(anchor(id))],
                        "test setup")
        }
        try raw.run("INSERT INTO watermark VALUES ('P', ?, 1, 'timer', 7, 1)", [.blob(StoreColumns.blob(theirs))], "test setup")
        raw.close()

        store = try DeliveryStore.open(path: dir.path())
        defer { store.close() }
        #expect(try store.sessions.record(featureID: "timer", id: mine)?.revision == 2)
        #expect(try store.sessions.record(featureID: "timer", id: theirs)?.sourcePeer == "P")
        #expect(try store.sessions.timerAnchor(featureID: "timer", sessionID: mine)?.revision == 3)
        #expect(try store.sessions.timerAnchor(featureID: "timer", sessionID: theirs, from: "P")?.bytes == anchor(theirs))
        #expect(try store.sessions.listTimerAnchors(localOnly: true).map(\.sessionID) == [mine])
        #expect(try store.peers.watermarks().map(\.sequence) == [7])
        #expect(store.tallies.peerState["P"] == PeerStateTally(sessions: 1, anchors: 1, anchorBytes: anchor(theirs).count))
    }

    @Test func onePeerCannotTakeMoreThanItsShareOfTheInbox() throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        let store = try DeliveryStore.open(path: dir.path(), options: DeliveryStoreOptions(maxInboxItems: 10))
        defer { store.close() }
        #expect(store.options.maxInboxItemsPerPeer == 5, "half of the inbox by default")
        let hostile = try store.inbox.receive(from: "H", items: (0..<5).map { makeInboxItem($0) }, at: storeTestEpoch)
        #expect(hostile.filter { if case .stored = $0 { true } else { false } }.count == 5)
        let refused = #expect(throws: StoreError.self) {
            try store.inbox.receive(from: "H", items: [makeInboxItem(9)], at: storeTestEpoch)
        }
        #expect(refused?.limit == .inboxItemsPerPeer(5))
        #expect(refused?.limit?.configKey == "inbox_max_items_per_peer")
        // The honest peer still gets its share; acks give the hostile peer room again.
        let honest = try store.inbox.receive(from: "P", items: (10..<15).map { makeInboxItem($0) }, at: storeTestEpoch)
        #expect(honest.allSatisfy { if case .stored = $0 { true } else { false } })
        let theirs = try store.inbox.pending(featureID: "demo").filter { $0.peer == "H" }.map(\.id)
        #expect(try store.inbox.acknowledge(ids: Array(theirs.prefix(2))) == 2)
        #expect(try store.inbox.receive(from: "H", items: [makeInboxItem(20)], at: storeTestEpoch).count == 1)
        #expect(store.tallies.inboxByPeer["H"] == QueueTally(items: 4, bytes: 32))
        print("store figure: inbox share 5 of 10; hostile peer stored 5, then refused; honest peer stored 5 of 5")
    }
}
