import Foundation
import MeshCore
import MeshCrypto
import Testing
@testable import MeshDaemon

/// The inviter's decisions as `PairingInvitations` makes them, at explicit times, without a
/// node or connection.
@Suite("Pairing invitations")
struct PairingInvitationsTests {
    static let start = PairingFixture.start
    static let own = PairingFixture.identity("alice")

    @Test("only the live code matches; a used code hands its device to a late pair.wait")
    func liveCodeAndLatePairWait() throws {
        var invitations = PairingInvitations()
        let code = PairingCode.generate()
        #expect(!invitations.isLive(code.description))
        _ = invitations.create(code: code, issuedAt: Self.start, lifetime: 60, allowsReplacing: false)
        #expect(invitations.isLive(code.description))
        #expect(!invitations.isLive(PairingFixture.otherCode(than: code).description))
        #expect(!invitations.isLive("not a code"))
        #expect(invitations.pairedByLiveCode == nil)
        let responder = try invitations.beginAttempt(at: Self.start, identity: Self.own, source: "198.18.0.9").get()
        #expect(invitations.complete(responder.attempt, alreadyPaired: false) == .pair)
        let device = PairedDevice(deviceID: "B", name: "bob", verification: "1234")
        #expect(invitations.paired(device).isEmpty)
        #expect(invitations.pairedByLiveCode?.deviceID == device.deviceID)
    }

    @Test("no code, an expired code and a used code refuse attempts; expiry is decided at the given time")
    func refusals() throws {
        var invitations = PairingInvitations()
        guard case .failure(.noCode) = invitations.beginAttempt(at: Self.start, identity: Self.own, source: "198.18.0.9") else {
            Issue.record("an attempt began without a code")
            return
        }
        _ = invitations.create(code: PairingCode.generate(), issuedAt: Self.start, lifetime: 60, allowsReplacing: false)
        #expect(invitations.expire(at: Self.start.addingTimeInterval(59)) == nil)
        guard case .failure(.refused) = invitations.beginAttempt(at: Self.start.addingTimeInterval(61), identity: Self.own, source: "198.18.0.9") else {
            Issue.record("an expired code accepted an attempt")
            return
        }
        #expect(invitations.expire(at: Self.start.addingTimeInterval(61)) != nil)
        #expect(invitations.live == nil)
    }

    @Test("a failed attempt from a third source invalidates the code and hands out its waiters then, not before")
    func invalidation() throws {
        var invitations = PairingInvitations()
        _ = invitations.create(code: PairingCode.generate(), issuedAt: Self.start, lifetime: 60, allowsReplacing: false)
        for round in 1 ... 3 {
            let responder = try invitations.beginAttempt(at: Self.start, identity: Self.own, source: "198.18.0.\(round)").get()
            let failed = invitations.attemptFailed(responder.attempt)
            #expect((failed != nil) == (round == 3))
        }
        #expect(invitations.live?.state == .invalidated)
    }

    @Test("a replaced code's attempt neither pairs nor counts against the new code")
    func staleAttempt() throws {
        var invitations = PairingInvitations()
        _ = invitations.create(code: PairingCode.generate(), issuedAt: Self.start, lifetime: 60, allowsReplacing: false)
        let old = try invitations.beginAttempt(at: Self.start, identity: Self.own, source: "198.18.0.9").get()
        _ = invitations.end()
        _ = invitations.create(code: PairingCode.generate(), issuedAt: Self.start, lifetime: 60, allowsReplacing: false)
        #expect(invitations.complete(old.attempt, alreadyPaired: false) == .stale)
        #expect(invitations.attemptFailed(old.attempt) == nil)
        #expect(invitations.live?.isUsable(at: Self.start) == true)
    }

    @Test("an already paired device pairs again only with a code created with replace")
    func alreadyPaired() throws {
        for replace in [false, true] {
            var invitations = PairingInvitations()
            _ = invitations.create(code: PairingCode.generate(), issuedAt: Self.start, lifetime: 60, allowsReplacing: replace)
            let responder = try invitations.beginAttempt(at: Self.start, identity: Self.own, source: "198.18.0.9").get()
            #expect(invitations.complete(responder.attempt, alreadyPaired: true) == (replace ? .pair : .alreadyPaired))
        }
    }
}
