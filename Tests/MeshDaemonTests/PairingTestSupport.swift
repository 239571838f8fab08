import Foundation
import MeshCrypto
@testable import MeshDaemon

/// Helpers shared by the pairing tests.
enum PairingFixture {
    static let start = Date(timeIntervalSince1970: 1_800_000_000)

    static func identity(_ name: String) -> PairingIdentity {
        PairingIdentity(publicKey: PairingSupport.randomBytes(count: 32), name: name)
    }

    /// A code different from `code`.
    static func otherCode(than code: PairingCode) -> PairingCode {
        for _ in 0 ..< 16 {
            let other = PairingCode.generate()
            if other != code { return other }
        }
        return PairingCode.generate()
    }

    /// The four messages of one honest run, and both outcomes.
    struct Run {
        var messages: [[UInt8]]
        var joinerOutcome: PairingOutcome
        var inviterOutcome: PairingOutcome
    }

    /// Runs joiner and responder against each other to the end; throws whatever either throws.
    static func run(joiner: inout PairingJoiner, responder: inout PairingResponder) throws -> Run {
        let m1 = try joiner.start()
        guard case .send(let m2) = try responder.receive(m1) else { throw Unexpected("responder finished early") }
        guard case .send(let m3) = try joiner.receive(m2) else { throw Unexpected("joiner finished early") }
        guard case .finished(let inviterOutcome, let last) = try responder.receive(m3), let m4 = last else {
            throw Unexpected("responder did not finish with message 4")
        }
        guard case .finished(let joinerOutcome, let nothing) = try joiner.receive(m4), nothing == nil else {
            throw Unexpected("joiner did not finish")
        }
        return Run(messages: [m1, m2, m3, m4], joinerOutcome: joinerOutcome, inviterOutcome: inviterOutcome)
    }

    struct Unexpected: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }
}

/// An attacker who guesses a code and, unlike an honest joiner, answers message 2 even though
/// the inviter's confirmation did not verify, so the inviter must catch it on message 3.
struct GuessingJoiner {
    let identity: PairingIdentity
    let cpace: CPace
    let hello: [UInt8]

    init(code: PairingCode, identity: PairingIdentity) throws {
        self.identity = identity
        let sid = PairingSupport.randomBytes(count: PairingProtocol.sessionIDBytes)
        cpace = try CPace(role: .initiator, password: code.secret.withUnsafeBytes { Array($0) },
                          channelIdentifier: PairingProtocol.channelIdentifier, sessionID: sid,
                          associatedData: PairingProtocol.joinerAssociatedData)
        hello = PairingHello(sessionID: sid, share: cpace.publicShare,
                             associatedData: PairingProtocol.joinerAssociatedData).encoded()
    }

    func ignoreConfirmationAndReply(to m2: [UInt8]) throws -> [UInt8] {
        let reply = try PairingInviterConfirmation(decoding: m2)
        let keys = PairingKeySchedule(isk: try cpace.finish(peerShare: reply.share, peerAssociatedData: reply.associatedData))
        let confirmation = keys.joinerConfirmation(hello: hello, reply: m2)
        let prefix = PairingJoinerConfirmation(confirmation: confirmation, sealedIdentity: []).encodedPrefix()
        let ad = PairingKeySchedule.joinerIdentityAssociatedData(messagePrefix: prefix, hello: hello, reply: m2)
        let sealed = try keys.sealJoinerIdentity(identity, associatedData: ad)
        return PairingJoinerConfirmation(confirmation: confirmation, sealedIdentity: sealed).encoded()
    }
}
