import Foundation
import MeshCrypto
import Testing
@testable import MeshDaemon

/// The pairing protocol end to end: both roles, both outcomes, and the invitation's rules.
@Suite struct PairingProtocolTests {
    let alice = PairingFixture.identity("alice-laptop")
    let bob = PairingFixture.identity("bob’s desk ☕️")

    @Test func rightCodePairsBothSidesWithTheSameKeyAndVerification() throws {
        let code = PairingCode.generate()
        var invitation = PairingInvitationState(code: code, issuedAt: PairingFixture.start, lifetime: 300)
        var responder = try invitation.beginAttempt(at: PairingFixture.start.addingTimeInterval(5), identity: alice, source: "198.18.0.9")
        var joiner = try PairingJoiner(code: try PairingCode.parse(code.description), identity: bob)

        let run = try PairingFixture.run(joiner: &joiner, responder: &responder)
        let consumed = invitation.attemptSucceeded(responder.attempt)
        #expect(consumed)

        #expect(run.joinerOutcome.pairKey == run.inviterOutcome.pairKey)
        #expect(run.joinerOutcome.pairKey.count == 32)
        #expect(run.joinerOutcome.verification == run.inviterOutcome.verification)
        #expect(!run.joinerOutcome.verification.isEmpty)
        #expect(run.joinerOutcome.peerPublicKey == alice.publicKey)
        #expect(run.joinerOutcome.peerName == alice.name)
        #expect(run.joinerOutcome.peerDeviceID == DeviceID(publicKey: alice.publicKey))
        #expect(run.inviterOutcome.peerPublicKey == bob.publicKey)
        #expect(run.inviterOutcome.peerName == bob.name)
        #expect(run.inviterOutcome.peerDeviceID == DeviceID(publicKey: bob.publicKey))
        #expect(invitation.state == .used)
    }

    @Test func twoPairingsWithTheSameCodeGiveDifferentKeys() throws {
        let code = PairingCode.generate()
        var first = try PairingJoiner(code: code, identity: bob)
        var firstResponder = PairingResponder(code: code, identity: alice)
        var second = try PairingJoiner(code: code, identity: bob)
        var secondResponder = PairingResponder(code: code, identity: alice)
        let a = try PairingFixture.run(joiner: &first, responder: &firstResponder)
        let b = try PairingFixture.run(joiner: &second, responder: &secondResponder)
        #expect(a.joinerOutcome.pairKey != b.joinerOutcome.pairKey)
    }

    @Test func wrongCodeFailsOnBothSidesAndTheInvitationCountsIt() throws {
        let code = PairingCode.generate()
        var invitation = PairingInvitationState(code: code, issuedAt: PairingFixture.start, lifetime: 300)
        var responder = try invitation.beginAttempt(at: PairingFixture.start, identity: alice, source: "198.18.0.9")
        var joiner = try PairingJoiner(code: PairingFixture.otherCode(than: code), identity: bob)

        guard case .send(let m2) = try responder.receive(try joiner.start()) else {
            Issue.record("responder finished early"); return
        }
        // The honest joiner learns of the wrong code from the inviter's confirmation and sends
        // nothing more: its identity never leaves the device.
        #expect(throws: PairingError.wrongCode) { try joiner.receive(m2) }
        invitation.attemptFailed(responder.attempt)
        #expect(invitation.failedAttempts == 1)
        #expect(invitation.state == .live)
    }

    @Test func aGuessingJoinerIsCaughtByTheInvitersCheckOfMessage3() throws {
        let code = PairingCode.generate()
        var invitation = PairingInvitationState(code: code, issuedAt: PairingFixture.start, lifetime: 300)
        var responder = try invitation.beginAttempt(at: PairingFixture.start, identity: alice, source: "198.18.0.9")
        let guesser = try GuessingJoiner(code: PairingFixture.otherCode(than: code), identity: bob)

        guard case .send(let m2) = try responder.receive(guesser.hello) else {
            Issue.record("responder finished early"); return
        }
        let m3 = try guesser.ignoreConfirmationAndReply(to: m2)
        #expect(throws: PairingError.wrongCode) { try responder.receive(m3) }
        invitation.attemptFailed(responder.attempt)
        #expect(invitation.failedAttempts == 1)
    }

    @Test func failuresFromThreeSourcesInvalidateTheCodeAndTheFourthAttemptIsRefused() throws {
        let code = PairingCode.generate()
        var invitation = PairingInvitationState(code: code, issuedAt: PairingFixture.start, lifetime: 300)
        for attempt in 1 ... 3 {
            let now = PairingFixture.start.addingTimeInterval(Double(attempt))
            var responder = try invitation.beginAttempt(at: now, identity: alice, source: "198.18.0.\(attempt)")
            var joiner = try PairingJoiner(code: PairingFixture.otherCode(than: code), identity: bob)
            guard case .send(let m2) = try responder.receive(try joiner.start()) else {
                Issue.record("responder finished early"); return
            }
            #expect(throws: PairingError.wrongCode) { try joiner.receive(m2) }
            invitation.attemptFailed(responder.attempt)
        }
        #expect(invitation.failedAttempts == 3)
        #expect(invitation.state == .invalidated)
        #expect(!invitation.isUsable(at: PairingFixture.start.addingTimeInterval(10)))
        #expect(throws: MeshError.pairingCodeInvalidated) {
            _ = try invitation.beginAttempt(at: PairingFixture.start.addingTimeInterval(10), identity: alice, source: "198.18.0.9")
        }
    }

    @Test func runningAttemptsCountAgainstTheLimitSoParallelGuessesGainNothing() throws {
        var invitation = PairingInvitationState(code: PairingCode.generate(), issuedAt: PairingFixture.start, lifetime: 300)
        var running: [PairingAttemptID] = []
        for source in 1 ... 3 {
            running.append(try invitation.beginAttempt(at: PairingFixture.start, identity: alice, source: "198.18.0.\(source)").attempt)
        }
        #expect(!invitation.isUsable(at: PairingFixture.start, source: "198.18.0.4"))
        #expect(throws: MeshError.pairingBusy) { _ = try invitation.beginAttempt(at: PairingFixture.start, identity: alice, source: "198.18.0.4") }
        for attempt in running { invitation.attemptFailed(attempt) }
        #expect(invitation.state == .invalidated)
    }

    @Test func anExpiredCodeRefusesNewAttempts() throws {
        var invitation = PairingInvitationState(code: PairingCode.generate(), issuedAt: PairingFixture.start, lifetime: 300)
        #expect(invitation.expiresAt == PairingFixture.start.addingTimeInterval(300))
        let justBefore = PairingFixture.start.addingTimeInterval(299.9)
        let atExpiry = PairingFixture.start.addingTimeInterval(300)
        #expect(invitation.isUsable(at: justBefore))
        #expect(!invitation.isUsable(at: atExpiry))
        #expect(invitation.state(at: atExpiry) == .expired)
        #expect(invitation.state == .live)
        #expect(throws: MeshError.pairingExpired) { _ = try invitation.beginAttempt(at: atExpiry, identity: alice, source: "198.18.0.9") }
        #expect(invitation.state == .expired)
    }

    @Test func aCodeIsSingleUse() throws {
        let code = PairingCode.generate()
        var invitation = PairingInvitationState(code: code, issuedAt: PairingFixture.start, lifetime: 300)
        var first = try invitation.beginAttempt(at: PairingFixture.start, identity: alice, source: "198.18.0.9")
        var racing = try invitation.beginAttempt(at: PairingFixture.start, identity: alice, source: "198.18.0.9")
        var joiner = try PairingJoiner(code: code, identity: bob)
        var other = try PairingJoiner(code: code, identity: PairingFixture.identity("carol"))
        _ = try PairingFixture.run(joiner: &joiner, responder: &first)
        let firstConsumed = invitation.attemptSucceeded(first.attempt)
        #expect(firstConsumed)

        // A second attempt already running when the first succeeded must not pair as well.
        let m1 = try other.start()
        guard case .send(let m2) = try racing.receive(m1), case .send(let m3) = try other.receive(m2),
              case .finished = try racing.receive(m3)
        else { Issue.record("racing attempt did not reach its end"); return }
        let secondConsumed = invitation.attemptSucceeded(racing.attempt)
        #expect(!secondConsumed)

        #expect(invitation.state == .used)
        #expect(!invitation.isUsable(at: PairingFixture.start.addingTimeInterval(1)))
        #expect(throws: MeshError.pairingCodeUsed) {
            _ = try invitation.beginAttempt(at: PairingFixture.start.addingTimeInterval(1), identity: alice, source: "198.18.0.9")
        }
    }

    @Test func aMessageFromAnotherSessionIsRejected() throws {
        let code = PairingCode.generate()
        var joinerA = try PairingJoiner(code: code, identity: bob)
        var responderA = PairingResponder(code: code, identity: alice)
        let runA = try PairingFixture.run(joiner: &joinerA, responder: &responderA)

        var joinerB = try PairingJoiner(code: code, identity: bob)
        var responderB = PairingResponder(code: code, identity: alice)
        _ = try responderB.receive(try joinerB.start())
        #expect(throws: PairingError.wrongCode) { try responderB.receive(runA.messages[2]) }
    }

    @Test func messagesOutOfOrderAreProtocolViolations() throws {
        let code = PairingCode.generate()
        var joiner = try PairingJoiner(code: code, identity: bob)
        var responder = PairingResponder(code: code, identity: alice)
        let m1 = try joiner.start()
        var twice = try PairingJoiner(code: code, identity: bob)
        _ = try twice.start()
        #expect(throws: PairingError.self) { _ = try twice.start() }

        var fresh = PairingResponder(code: code, identity: alice)
        let early = try #require(throws: PairingError.self) {
            try fresh.receive([PairingProtocol.version, 3] + [UInt8](repeating: 0, count: 177))
        }
        #expect(early.code == .protocolViolation)

        var mirror = try PairingJoiner(code: code, identity: bob)
        _ = try mirror.start()
        let reflected = try #require(throws: PairingError.self) { try mirror.receive(m1) }
        #expect(reflected.code == .protocolViolation)

        guard case .send(let m2) = try responder.receive(m1), case .send(let m3) = try joiner.receive(m2),
              case .finished(_, let m4?) = try responder.receive(m3)
        else { Issue.record("honest run failed"); return }
        _ = try joiner.receive(m4)
        #expect(throws: PairingError.self) { try joiner.receive(m4) }
        #expect(throws: PairingError.self) { try responder.receive(m3) }
    }

    @Test func aPeerPresentingOurOwnKeyIsRefused() throws {
        let code = PairingCode.generate()
        var joiner = try PairingJoiner(code: code, identity: PairingLocalIdentity(keyPair: alice.keyPair, name: "impostor"))
        var responder = PairingResponder(code: code, identity: alice)
        let error = try #require(throws: PairingError.self) { try PairingFixture.run(joiner: &joiner, responder: &responder) }
        #expect(error.code == .protocolViolation)
    }

    @Test func aTypoIsCaughtByParsingBeforeAnyMessage() throws {
        let code = PairingCode.generate()
        let text = code.description
        #expect(try PairingCode.parse(text) == code)
        #expect(try PairingCode.parse(text.lowercased()) == code)
        var typos = 0
        for (index, character) in text.enumerated() where character != "-" {
            for replacement in Set(text.filter { $0 != "-" && $0 != character }) {
                var chars = Array(text)
                chars[index] = replacement
                #expect(throws: (any Error).self) { _ = try PairingCode.parse(String(chars)) }
                typos += 1
            }
        }
        #expect(typos > 0)
    }

    @Test func errorsNeverShowTheCode() throws {
        let code = PairingCode.generate()
        let errors: [PairingError] = [.wrongCode, .unsupportedVersion, .malformed("message 1 (hello): x"),
                                      .protocolViolation("y"), .invalidIdentity("z"), .unprovenKey]
        for error in errors {
            #expect(!error.description.contains(code.description))
            #expect(error.controlError.code == "pairing-failed")
        }
        #expect(PairingError.wrongCode.controlError == .pairingFailed)
    }
}
