import Foundation
import MeshCrypto
import Testing
@testable import MeshDaemon

/// Helpers shared by the pairing tests.
enum PairingFixture {
    static let start = Date(timeIntervalSince1970: 1_800_000_000)

    static func identity(_ name: String) -> PairingLocalIdentity {
        PairingLocalIdentity(keyPair: X25519KeyPair.generate(), name: name)
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
///
/// With the right code it plays a code holder instead: it presents `presented` (for instance
/// another device's public key) and signs its proof of possession with the private key it does
/// hold (`own`), the best it can do without the presented key's private half.
struct GuessingJoiner {
    let presented: PairingIdentity
    let own: X25519KeyPair
    let cpace: CPace
    let hello: [UInt8]

    init(code: PairingCode, identity: PairingLocalIdentity, presenting presented: PairingIdentity? = nil) throws {
        self.presented = presented ?? identity.presented
        own = identity.keyPair
        let sid = PairingSupport.randomBytes(count: PairingProtocol.sessionIDBytes)
        cpace = try CPace(role: .initiator, password: code.secret.withUnsafeBytes { Array($0) },
                          channelIdentifier: PairingProtocol.channelIdentifier, sessionID: sid,
                          associatedData: PairingProtocol.joinerAssociatedData)
        hello = PairingHello(sessionID: sid, share: cpace.publicShare,
                             associatedData: PairingProtocol.joinerAssociatedData,
                             ephemeral: X25519KeyPair.generate().publicKey).encoded()
    }

    func ignoreConfirmationAndReply(to m2: [UInt8]) throws -> [UInt8] {
        let reply = try PairingInviterConfirmation(decoding: m2)
        let keys = PairingKeySchedule(isk: try cpace.finish(peerShare: reply.share, peerAssociatedData: reply.associatedData))
        let confirmation = keys.joinerConfirmation(hello: hello, reply: m2)
        let prefix = PairingJoinerConfirmation(confirmation: confirmation, sealedIdentity: [], proof: []).encodedPrefix()
        let ad = PairingKeySchedule.joinerIdentityAssociatedData(messagePrefix: prefix, hello: hello, reply: m2)
        let sealed = try keys.sealJoinerIdentity(presented, associatedData: ad)
        let shared = try #require(PairingSupport.x25519(privateKey: own.privateKey, publicKey: reply.ephemeral))
        let proof = keys.joinerProof(sharedSecret: shared, staticKey: presented.publicKey, hello: hello, reply: m2)
        return PairingJoinerConfirmation(confirmation: confirmation, sealedIdentity: sealed, proof: proof).encoded()
    }
}

/// A code holder posing as the inviter: answers like an honest responder but presents
/// `presented` in message 4, proving with the private key it holds (`own`).
struct ImpostorInviter {
    let code: PairingCode
    let presented: PairingIdentity
    let own: X25519KeyPair
    private let ephemeral = X25519KeyPair.generate()
    private var keys: PairingKeySchedule?
    private var hello: [UInt8] = []
    private var joinerEphemeral: [UInt8] = []
    private var reply: [UInt8] = []

    init(code: PairingCode, own: X25519KeyPair, presenting presented: PairingIdentity) {
        self.code = code
        self.own = own
        self.presented = presented
    }

    mutating func answer(_ m1: [UInt8]) throws -> [UInt8] {
        let decoded = try PairingHello(decoding: m1)
        let cpace = try CPace(role: .responder, password: code.secret.withUnsafeBytes { Array($0) },
                              channelIdentifier: PairingProtocol.channelIdentifier, sessionID: decoded.sessionID,
                              associatedData: PairingProtocol.inviterAssociatedData)
        let keys = PairingKeySchedule(isk: try cpace.finish(peerShare: decoded.share, peerAssociatedData: decoded.associatedData))
        var message = PairingInviterConfirmation(share: cpace.publicShare, associatedData: PairingProtocol.inviterAssociatedData,
                                                 ephemeral: ephemeral.publicKey, confirmation: [])
        message.confirmation = keys.inviterConfirmation(hello: m1, replyPrefix: message.encodedPrefix())
        self.keys = keys
        hello = m1
        joinerEphemeral = decoded.ephemeral
        reply = message.encoded()
        return reply
    }

    func identify(after m3: [UInt8]) throws -> [UInt8] {
        let keys = try #require(keys)
        let ad = PairingKeySchedule.inviterIdentityAssociatedData(
            messagePrefix: PairingInviterIdentity(sealedIdentity: [], proof: []).encodedPrefix(),
            hello: hello, reply: reply, joinerMessage: m3)
        let sealed = try keys.sealInviterIdentity(presented, associatedData: ad)
        let shared = try #require(PairingSupport.x25519(privateKey: own.privateKey, publicKey: joinerEphemeral))
        let proof = keys.inviterProof(sharedSecret: shared, staticKey: presented.publicKey, hello: hello,
                                      reply: reply, joinerMessage: m3)
        return PairingInviterIdentity(sealedIdentity: sealed, proof: proof).encoded()
    }
}
