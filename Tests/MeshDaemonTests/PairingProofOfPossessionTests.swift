import Foundation
import MeshCrypto
import Testing
@testable import MeshDaemon

/// Each side proves it holds the private key of the static key it presents, bound to the
/// attempt: a code holder cannot register another device's public key (docs/PAIRING.md,
/// "Proof of possession").
@Suite struct PairingProofOfPossessionTests {
    let alice = PairingFixture.identity("alice")
    let victim = PairingFixture.identity("victim")
    let mallory = PairingFixture.identity("mallory")

    /// Runs a code-holding joiner presenting `presented` against an honest inviter; returns the
    /// inviter's outcome or its error.
    func joinAsCodeHolder(presenting presented: PairingIdentity) throws -> Result<PairingOutcome, PairingError> {
        let code = PairingCode.generate()
        var invitation = PairingInvitationState(code: code, issuedAt: PairingFixture.start, lifetime: 300)
        var responder = try invitation.beginAttempt(at: PairingFixture.start, identity: alice, source: "198.18.0.9")
        let holder = try GuessingJoiner(code: code, identity: mallory, presenting: presented)
        guard case .send(let m2) = try responder.receive(holder.hello) else { throw PairingFixture.Unexpected("no m2") }
        let m3 = try holder.ignoreConfirmationAndReply(to: m2)
        do {
            guard case .finished(let outcome, _) = try responder.receive(m3) else { throw PairingFixture.Unexpected("no m4") }
            return .success(outcome)
        } catch let error as PairingError {
            invitation.attemptFailed(responder.attempt)
            #expect(invitation.failedAttempts == 1)
            return .failure(error)
        }
    }

    @Test func aJoinerWithTheCodePresentingAnotherDevicesKeyIsRefused() throws {
        let result = try joinAsCodeHolder(presenting: PairingIdentity(publicKey: victim.publicKey, name: "victim"))
        #expect(throws: PairingError.unprovenKey) { try result.get() }
        // The same code holder presenting the key it holds pairs: only the key made the difference.
        let honest = try joinAsCodeHolder(presenting: mallory.presented)
        #expect(try honest.get().peerPublicKey == mallory.publicKey)
    }

    @Test func aJoinerPresentingALowOrderKeyIsRefused() throws {
        var lowOrder = [UInt8](repeating: 0, count: 32)
        lowOrder[0] = 1  // u = 1: every X25519 with it is all zero, which anyone could "prove"
        let result = try joinAsCodeHolder(presenting: PairingIdentity(publicKey: lowOrder, name: "nobody"))
        #expect(throws: PairingError.unprovenKey) { try result.get() }
    }

    @Test func anInviterWithTheCodePresentingAnotherDevicesKeyIsRefused() throws {
        func join(against inviter: inout ImpostorInviter, code: PairingCode) throws -> PairingStep {
            var joiner = try PairingJoiner(code: code, identity: alice)
            let m2 = try inviter.answer(try joiner.start())
            guard case .send(let m3) = try joiner.receive(m2) else { throw PairingFixture.Unexpected("no m3") }
            return try joiner.receive(try inviter.identify(after: m3))
        }
        let code = PairingCode.generate()
        var impostor = ImpostorInviter(code: code, own: mallory.keyPair, presenting: victim.presented)
        #expect(throws: PairingError.unprovenKey) { _ = try join(against: &impostor, code: code) }

        var honest = ImpostorInviter(code: code, own: mallory.keyPair, presenting: mallory.presented)
        guard case .finished(let outcome, nil) = try join(against: &honest, code: code) else {
            Issue.record("an inviter presenting its own key must pair"); return
        }
        #expect(outcome.peerPublicKey == mallory.publicKey)
    }

    @Test func aProofCopiedFromAnotherAttemptIsRefused() throws {
        // The victim pairs honestly; a code holder of a later code replays the victim's identity
        // and proof bytes from that run into its own attempt.
        let first = PairingCode.generate()
        var victimJoiner = try PairingJoiner(code: first, identity: victim)
        var firstResponder = PairingResponder(code: first, identity: alice)
        let recorded = try PairingFixture.run(joiner: &victimJoiner, responder: &firstResponder)
        let victimProof = try PairingJoinerConfirmation(decoding: recorded.messages[2]).proof

        let second = PairingCode.generate()
        var responder = PairingResponder(code: second, identity: alice)
        let holder = try GuessingJoiner(code: second, identity: mallory, presenting: victim.presented)
        guard case .send(let m2) = try responder.receive(holder.hello) else { Issue.record("no m2"); return }
        var m3 = try PairingJoinerConfirmation(decoding: try holder.ignoreConfirmationAndReply(to: m2))
        m3.proof = victimProof
        #expect(throws: PairingError.unprovenKey) { try responder.receive(m3.encoded()) }
    }

    @Test func checkHelloIsAPureCheckOfTheFirstMessage() throws {
        let code = PairingCode.generate()
        var joiner = try PairingJoiner(code: code, identity: alice)
        let hello = try joiner.start()
        try PairingResponder.checkHello(hello)
        for bad in [[], [PairingProtocol.version], [0x53, 0x4D, 0x01, 0x02], Array(hello.dropLast()), hello + [0]] as [[UInt8]] {
            #expect(throws: PairingError.self) { try PairingResponder.checkHello(bad) }
        }
        var otherAD = try PairingHello(decoding: hello)
        otherAD.associatedData = PairingProtocol.inviterAssociatedData
        #expect(throws: PairingError.self) { try PairingResponder.checkHello(otherAD.encoded()) }
    }
}

/// Attempts belong to the invitation they began under.
@Suite struct PairingInvitationAttemptTests {
    let alice = PairingFixture.identity("alice")

    @Test func attemptsOfAReplacedCodeNeitherSucceedNorCountAgainstTheNewOne() throws {
        let code = PairingCode.generate()
        var old = PairingInvitationState(code: code, issuedAt: PairingFixture.start, lifetime: 300, serial: 1)
        let stale = try (1 ... 3).map { try old.beginAttempt(at: PairingFixture.start, identity: alice, source: "198.18.0.\($0)").attempt }
        // Even a replacement that happens to show the same code does not take the old attempts.
        var new = PairingInvitationState(code: code, issuedAt: PairingFixture.start, lifetime: 300, serial: 2)
        for attempt in stale {
            let counted = new.attemptFailed(attempt)
            let paired = new.attemptSucceeded(attempt)
            #expect(!counted && !paired)
        }
        #expect(new.failedAttempts == 0 && new.state == .live)
        #expect(new.isUsable(at: PairingFixture.start))
        let fresh = try new.beginAttempt(at: PairingFixture.start, identity: alice, source: "198.18.0.9")
        #expect(fresh.attempt.invitation == 2)
        let paired = new.attemptSucceeded(fresh.attempt)
        #expect(paired)
        #expect(new.state == .used)
    }

    @Test func endingAnAttemptTwiceCountsOnce() throws {
        var invitation = PairingInvitationState(code: PairingCode.generate(), issuedAt: PairingFixture.start, lifetime: 300)
        let attempt = try invitation.beginAttempt(at: PairingFixture.start, identity: alice, source: "198.18.0.9").attempt
        let first = invitation.attemptFailed(attempt)
        let second = invitation.attemptFailed(attempt)
        let succeeded = invitation.attemptSucceeded(attempt)
        #expect(first && !second && !succeeded)
        #expect(invitation.failedAttempts == 1)
        #expect(invitation.attemptsInProgress == 0)
        #expect(invitation.state == .live)
    }
}
