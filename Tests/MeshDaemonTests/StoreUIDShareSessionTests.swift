import Foundation
import Testing
@testable import MeshDaemon

/// One local uid's share of this device's session rows and timer anchors: a uid creating ever
/// new rows is refused at its share while another uid, the daemon and peers still write; a newer
/// revision of a row that exists always fits; the counts are rebuilt at open and a deleted row
/// gives its room back.
@Suite("DeliveryStore per-uid session and anchor share")
struct StoreUIDShareSessionTests {
    private static let options = DeliveryStoreOptions(maxSessionsPerUID: 3, maxAnchorsPerUID: 3)

    private func row(_ id: UUID, status: String = "open", revision: UInt64 = 1, peer: String? = nil) -> SessionRecord {
        SessionRecord(sessionID: id, featureID: "demo", owner: "me", status: status, updatedAt: storeTestEpoch,
                      revision: revision, sourcePeer: peer)
    }

    @Test func aUIDAnnouncingNewSessionsIsRefusedAtItsShareAndUpdatesStillFit() throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        var store = try DeliveryStore.open(path: dir.path(), options: Self.options)
        let sessions = (0..<4).map { _ in UUID() }
        for session in sessions.prefix(3) { #expect(try store.sessions.put(row(session), ownerUID: 1001)) }
        let error = #expect(throws: StoreError.self) { try store.sessions.put(row(sessions[3]), ownerUID: 1001) }
        #expect(error?.code == .full)
        #expect(error?.limit == .sessionsPerUID(3))
        #expect(error?.limit?.configKey == "uid_max_sessions")
        #expect(error.map { "\($0)" }?.contains("uid 1001 holds its share of this device's session rows (3 rows)") == true,
                "\(String(describing: error))")
        #expect(error.map { "\($0)" }?.contains("`uid_max_sessions` in meshd.toml") == true)
        #expect(try store.sessions.record(featureID: "demo", id: sessions[3]) == nil, "nothing stored")
        // A newer revision (closing it too) of a row the uid has fits; a stale one is answered false.
        #expect(try store.sessions.put(row(sessions[0], revision: 2), ownerUID: 1001))
        #expect(try store.sessions.put(row(sessions[0], status: "closed", revision: 3), ownerUID: 1001))
        #expect(try !store.sessions.put(row(sessions[1], revision: 1), ownerUID: 1001))
        // Another uid, the daemon (no uid) and a peer still write new rows.
        #expect(try store.sessions.put(row(sessions[3]), ownerUID: 1002))
        #expect(try store.sessions.put(row(UUID())))
        let fromPeer = UUID()
        #expect(try store.sessions.putFromPeer(row(fromPeer, peer: "B")) == .stored)
        // Taking over a peer's row makes no new row: it counts toward no uid.
        #expect(try store.sessions.put(row(fromPeer, revision: 2), ownerUID: 1002))
        #expect(store.tallies.sessionsByUID == [1001: 3, 1002: 1])
        store.close()

        // Counted again at open; a deleted row gives its room back.
        store = try DeliveryStore.open(path: dir.path(), options: Self.options)
        defer { store.close() }
        #expect(store.tallies.sessionsByUID == [1001: 3, 1002: 1])
        // At its share, the uid's oldest closed session is forgotten to make room for a new one,
        // and with no closed one left, a new session is refused.
        #expect(try store.sessions.put(row(UUID()), ownerUID: 1001))
        #expect(try store.sessions.record(featureID: "demo", id: sessions[0]) == nil, "the closed session was forgotten")
        #expect(store.tallies.sessionsByUID == [1001: 3, 1002: 1])
        #expect(throws: StoreError.self) { try store.sessions.put(self.row(UUID()), ownerUID: 1001) }
        #expect(try store.sessions.delete(featureID: "demo", id: sessions[2]))
        #expect(store.tallies.sessionsByUID == [1001: 2, 1002: 1])
        #expect(try store.sessions.put(row(UUID()), ownerUID: 1001))
    }

    @Test func aPeerAtItsShareMakesRoomWithItsOldestClosedSessionOnly() throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        var options = Self.options
        options.peerState = PeerStateLimits(sessionsPerPeer: 2)
        let store = try DeliveryStore.open(path: dir.path(), options: options)
        defer { store.close() }
        let older = UUID(), newer = UUID(), open = UUID(), otherPeers = UUID()
        var closedOlder = row(older, status: "closed", peer: "B")
        closedOlder.updatedAt = storeTestEpoch.addingTimeInterval(-60)
        #expect(try store.sessions.putFromPeer(closedOlder) == .stored)
        #expect(try store.sessions.putFromPeer(row(newer, status: "closed", peer: "B")) == .stored)
        #expect(try store.sessions.putFromPeer(row(otherPeers, status: "closed", peer: "C")) == .stored)
        // B is at its share: its oldest closed session goes, not the newer one, nor C's.
        #expect(try store.sessions.putFromPeer(row(open, peer: "B")) == .stored)
        #expect(try store.sessions.record(featureID: "demo", id: older) == nil)
        #expect(try store.sessions.record(featureID: "demo", id: newer) != nil)
        #expect(try store.sessions.record(featureID: "demo", id: otherPeers) != nil)
        // The newer closed one makes room next; then, with only open sessions, B is refused.
        #expect(try store.sessions.putFromPeer(row(UUID(), peer: "B")) == .stored)
        #expect(try store.sessions.record(featureID: "demo", id: newer) == nil)
        guard case .refused = try store.sessions.putFromPeer(row(UUID(), peer: "B")) else {
            Issue.record("a peer whose share holds only open sessions must be refused")
            return
        }
        #expect(try store.sessions.record(featureID: "demo", id: open)?.status == "open")
    }

    @Test func aUIDSettingNewAnchorsIsRefusedAtItsShareAndUpdatesStillFit() throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        var store = try DeliveryStore.open(path: dir.path(), options: Self.options)
        let sessions = (0..<4).map { _ in UUID() }
        func put(_ session: UUID, revision: UInt64 = 1, from peer: String? = nil, uid: UInt32?) throws -> StorePutResult {
            try store.sessions.putTimerAnchor(featureID: "demo", sessionID: session, from: peer, revision: revision, bytes: [1, 2],
                                              at: storeTestEpoch, ownerUID: uid)
        }
        for session in sessions.prefix(3) { #expect(try put(session, uid: 1001) == .stored) }
        let error = #expect(throws: StoreError.self) { try put(sessions[3], uid: 1001) }
        #expect(error?.limit == .anchorsPerUID(3))
        #expect(error?.limit?.configKey == "uid_max_anchors")
        #expect(error.map { "\($0)" }?.contains("uid 1001 holds its share of this device's timer anchors (3 anchors)") == true,
                "\(String(describing: error))")
        #expect(try store.sessions.timerAnchor(featureID: "demo", sessionID: sessions[3]) == nil, "nothing stored")
        #expect(try put(sessions[0], revision: 2, uid: 1001) == .stored, "a newer revision fits")
        #expect(try put(sessions[0], revision: 2, uid: 1001) == .stale)
        // Another uid, the daemon and a peer (its own row of the same session) still write.
        #expect(try put(sessions[3], uid: 1002) == .stored)
        #expect(try put(UUID(), uid: nil) == .stored)
        #expect(try put(sessions[1], from: "B", uid: 1001) == .stored, "a peer's anchor counts toward no uid")
        #expect(store.tallies.anchorsByUID == [1001: 3, 1002: 1])
        store.close()

        store = try DeliveryStore.open(path: dir.path(), options: Self.options)
        defer { store.close() }
        #expect(store.tallies.anchorsByUID == [1001: 3, 1002: 1])
        #expect(try store.sessions.deleteTimerAnchor(featureID: "demo", sessionID: sessions[2]))
        #expect(try store.sessions.deleteTimerAnchor(featureID: "demo", sessionID: sessions[1], from: "B"))
        #expect(store.tallies.anchorsByUID == [1001: 2, 1002: 1])
        #expect(try put(UUID(), uid: 1001) == .stored)
        #expect(throws: StoreError.self) { try put(UUID(), uid: 1001) }
    }
}
