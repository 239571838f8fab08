import Foundation
import Testing
@testable import MeshDaemon

/// The session owner hand-over's rules and their store: who takes over, which claim wins, and
/// that a stored claim moves the row to its owner (shares counted), keeps a closed session
/// closed and is remembered as handed over.
@Suite("session owner hand-over rules")
struct SessionHandOverRuleTests {
    private func row(_ id: UUID, owner: String = "app", status: String = "open", revision: UInt64, from peer: String?) -> SessionRecord {
        SessionRecord(sessionID: id, featureID: "demo", owner: owner, status: status, updatedAt: storeTestEpoch,
                      revision: revision, sourcePeer: peer)
    }

    @Test func theSuccessorIsTheLowestDeviceIDAsBytes() {
        #expect(SessionHandOverRule.successor(among: ["QB", "QA", "Z2"]) == "QA")
        // Text order, not base32 value order: "2" (0x32) sorts before "A" (0x41).
        #expect(SessionHandOverRule.successor(among: ["AAAA", "2AAA"]) == "2AAA")
        #expect(SessionHandOverRule.successor(among: []) == nil)
    }

    @Test func aHigherRevisionWinsThenTheLowerOwner() {
        #expect(SessionHandOverRule.wins(revision: 3, owner: "Z", over: 2, "A"))
        #expect(!SessionHandOverRule.wins(revision: 2, owner: "A", over: 3, "Z"))
        #expect(SessionHandOverRule.wins(revision: 3, owner: "A", over: 3, "B"))
        #expect(!SessionHandOverRule.wins(revision: 3, owner: "B", over: 3, "A"))
        #expect(!SessionHandOverRule.wins(revision: 3, owner: "A", over: 3, "A"), "the same claim does not win twice")
    }

    @Test func theDecisionNeverRevivesAClosedSessionAndAnswersOnlyWhenStrictlyBetter() {
        let id = UUID()
        let claim = row(id, owner: "B", revision: 4, from: "B")
        #expect(SessionHandOverRule.decide(claim, over: nil, local: "L") == .accept)
        #expect(SessionHandOverRule.decide(claim, over: row(id, revision: 3, from: "O"), local: "L") == .accept)
        #expect(SessionHandOverRule.decide(claim, over: row(id, status: "closed", revision: 1, from: "O"), local: "L") == .closed)
        #expect(SessionHandOverRule.decide(claim, over: row(id, revision: 5, from: "O"), local: "L") == .stale(reply: true))
        #expect(SessionHandOverRule.decide(claim, over: row(id, revision: 4, from: "A"), local: "L") == .stale(reply: true))
        #expect(SessionHandOverRule.decide(claim, over: row(id, revision: 4, from: "B"), local: "L") == .stale(reply: false))
        // This device's own row is held by this device.
        #expect(SessionHandOverRule.decide(claim, over: row(id, revision: 4, from: nil), local: "A") == .stale(reply: true))
        #expect(SessionHandOverRule.decide(claim, over: row(id, revision: 4, from: nil), local: "C") == .accept)
    }

    @Test func aStoredClaimMovesTheRowToItsOwnerAndCountsItThere() throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        let store = try DeliveryStore.open(path: dir.path(), options: DeliveryStoreOptions(maxSessionsPerUID: 2))
        let mine = UUID(), theirs = UUID()
        #expect(try store.sessions.put(row(mine, revision: 1, from: nil), ownerUID: 1001))
        #expect(try store.sessions.putFromPeer(row(theirs, revision: 2, from: "O")) == .stored)
        #expect(store.tallies.sessionsByUID[1001] == 1)

        // A claim over this device's row: the row is B's now and leaves the uid's share.
        let claimMine = row(mine, owner: "B", revision: 2, from: "B")
        #expect(try store.sessions.putClaim(claimMine, localDevice: "L") == .stored(previous: row(mine, revision: 1, from: nil)))
        let stored = try #require(try store.sessions.record(featureID: "demo", id: mine))
        #expect(stored.sourcePeer == "B" && stored.owner == "B" && stored.revision == 2 && stored.handedOver)
        #expect((store.tallies.sessionsByUID[1001] ?? 0) == 0)
        #expect(store.tallies.peerState["B"]?.sessions == 1)

        // A claim over a peer's row moves it from O to B; O's later plain records no longer reach it.
        #expect(try store.sessions.putClaim(row(theirs, owner: "B", revision: 3, from: "B"), localDevice: "L")
                == .stored(previous: row(theirs, revision: 2, from: "O")))
        #expect(store.tallies.peerState["B"]?.sessions == 2)
        #expect((store.tallies.peerState["O"]?.sessions ?? 0) == 0)
        #expect(try store.sessions.putFromPeer(row(theirs, revision: 9, from: "O")) == .notOwned)
        // The owner's own later record updates it and it stays marked handed over.
        #expect(try store.sessions.putFromPeer(row(theirs, owner: "B", status: "paused", revision: 4, from: "B")) == .stored)
        #expect(try store.sessions.record(featureID: "demo", id: theirs)?.handedOver == true)

        // A losing claim is stale, with the better row to answer; a closed session stays closed.
        guard case .stale(let current, reply: true) = try store.sessions.putClaim(row(theirs, owner: "C", revision: 3, from: "C"), localDevice: "L") else {
            Issue.record("a losing claim is stale")
            return
        }
        #expect(current.revision == 4 && current.sourcePeer == "B")
        #expect(try store.sessions.putFromPeer(row(theirs, status: "closed", revision: 5, from: "B")) == .stored)
        #expect(try store.sessions.putClaim(row(theirs, owner: "C", revision: 9, from: "C"), localDevice: "L") == .closed)
    }

    @Test func aClaimOfANewSessionFitsTheOwnersShareOnly() throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        var options = DeliveryStoreOptions()
        options.peerState.sessionsPerPeer = 1
        let store = try DeliveryStore.open(path: dir.path(), options: options)
        #expect(try store.sessions.putClaim(row(UUID(), owner: "B", revision: 1, from: "B"), localDevice: "L") == .stored(previous: nil))
        guard case .refused = try store.sessions.putClaim(row(UUID(), owner: "B", revision: 1, from: "B"), localDevice: "L") else {
            Issue.record("a second new row is past B's share")
            return
        }
        #expect(try store.sessions.list().count == 1)
    }

    @Test func aTakenOverRowStaysMarkedThroughItsOwnUpdatesAndReopens() throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        let id = UUID()
        do {
            let store = try DeliveryStore.open(path: dir.path())
            #expect(try store.sessions.putFromPeer(row(id, revision: 1, from: "O")) == .stored)
            var taken = row(id, owner: "L", revision: 2, from: nil)
            taken.handedOver = true
            #expect(try store.sessions.put(taken))
            #expect(try store.sessions.put(row(id, owner: "L", status: "paused", revision: 3, from: nil)))
            store.close()
        }
        let reopened = try DeliveryStore.open(path: dir.path())
        let stored = try #require(try reopened.sessions.record(featureID: "demo", id: id))
        #expect(stored.handedOver && stored.status == "paused" && stored.sourcePeer == nil)
    }
}
