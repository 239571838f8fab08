import MeshCrypto

/// The inviter's side of one pairing attempt (CPace responder; it accepted the connection).
///
/// Obtain one from ``PairingInvitationState/beginAttempt(at:identity:)`` once the joiner's
/// first message passed ``checkHello(_:)``. Feed each message from the joiner to
/// ``receive(_:)``: message 1 returns `.send(message 2)`, message 3 returns
/// `.finished(outcome, send: message 4)`. Before writing message 4, call
/// ``PairingInvitationState/attemptSucceeded(_:)`` with ``attempt`` and write it only when that
/// returns `true`. When `receive` throws, or the joiner goes silent or disconnects, close the
/// connection and call ``PairingInvitationState/attemptFailed(_:)``.
public struct PairingResponder: Sendable {
    private enum Stage: Sendable {
        case awaitingHello(PairingCode)
        case awaitingConfirmation(PairingKeySchedule, ephemeral: X25519KeyPair, joinerEphemeral: [UInt8],
                                  hello: [UInt8], reply: [UInt8])
        case finished
        case failed
    }

    /// The invitation and attempt this responder counts against.
    public let attempt: PairingAttemptID
    private let identity: PairingLocalIdentity
    private var stage: Stage

    /// A responder for `code`, answering as `identity` (already validated).
    init(code: PairingCode, identity: PairingLocalIdentity, attempt: PairingAttemptID = PairingAttemptID(invitation: 0, number: 0)) {
        self.identity = identity
        self.attempt = attempt
        stage = .awaitingHello(code)
    }

    /// Throws the ``PairingError`` that ``receive(_:)`` would throw for `message` as a first
    /// message before any cryptography: malformed, wrong version, wrong type or associated data.
    /// A pure function of the bytes; the inviter calls it before an attempt counts against the
    /// code, so connections that send nothing or garbage cost the code nothing.
    public static func checkHello(_ message: [UInt8]) throws(PairingError) {
        let hello = try PairingHello(decoding: message)
        guard hello.associatedData == PairingProtocol.joinerAssociatedData else {
            throw .protocolViolation("\(PairingMessageType.hello): unexpected CPace associated data")
        }
    }

    /// Feeds the joiner's next message.
    ///
    /// Throws ``PairingError/wrongCode`` when the joiner's confirmation (message 3) does not
    /// verify — the joiner used another code, or someone is guessing —,
    /// ``PairingError/unprovenKey`` when the joiner knew the code but its proof of possession
    /// of the key it presented does not verify, and `.malformed` / `.protocolViolation` /
    /// `.unsupportedVersion` for a bad or unexpected message. Either way the attempt is over:
    /// close the connection and count a failed attempt. After a throw, the responder refuses
    /// everything.
    public mutating func receive(_ message: [UInt8]) throws -> PairingStep {
        do {
            return try advance(message)
        } catch {
            stage = .failed
            throw error
        }
    }

    private mutating func advance(_ message: [UInt8]) throws(PairingError) -> PairingStep {
        switch stage {
        case .awaitingHello(let code):
            return try receiveHello(message, code: code)
        case .awaitingConfirmation(let keys, let ephemeral, let joinerEphemeral, let hello, let reply):
            return try receiveConfirmation(message, keys: keys, ephemeral: ephemeral, joinerEphemeral: joinerEphemeral,
                                           hello: hello, reply: reply)
        case .finished:
            throw .protocolViolation("received a message after pairing finished")
        case .failed:
            throw .protocolViolation("received a message after the attempt failed")
        }
    }

    private mutating func receiveHello(_ message: [UInt8], code: PairingCode) throws(PairingError) -> PairingStep {
        try Self.checkHello(message)
        let hello = try PairingHello(decoding: message)
        var password = code.secret.withUnsafeBytes { Array($0) }
        defer { PairingSupport.zero(&password) }
        let cpace: CPace
        let isk: SecretBytes
        do {
            cpace = try CPace(role: .responder, password: password,
                              channelIdentifier: PairingProtocol.channelIdentifier,
                              sessionID: hello.sessionID, associatedData: PairingProtocol.inviterAssociatedData)
            isk = try cpace.finish(peerShare: hello.share, peerAssociatedData: hello.associatedData)
        } catch {
            throw .protocolViolation("\(PairingMessageType.hello): the joiner's CPace share is not acceptable")
        }
        let keys = PairingKeySchedule(isk: isk)
        let ephemeral = X25519KeyPair.generate()
        var reply = PairingInviterConfirmation(share: cpace.publicShare,
                                               associatedData: PairingProtocol.inviterAssociatedData,
                                               ephemeral: ephemeral.publicKey, confirmation: [])
        reply.confirmation = keys.inviterConfirmation(hello: message, replyPrefix: reply.encodedPrefix())
        let outgoing = reply.encoded()
        stage = .awaitingConfirmation(keys, ephemeral: ephemeral, joinerEphemeral: hello.ephemeral,
                                      hello: message, reply: outgoing)
        return .send(outgoing)
    }

    private mutating func receiveConfirmation(_ message: [UInt8], keys: PairingKeySchedule, ephemeral: X25519KeyPair,
                                              joinerEphemeral: [UInt8], hello: [UInt8],
                                              reply: [UInt8]) throws(PairingError) -> PairingStep {
        let decoded = try PairingJoinerConfirmation(decoding: message)
        let expected = keys.joinerConfirmation(hello: hello, reply: reply)
        guard PairingSupport.constantTimeEqual(expected, decoded.confirmation) else { throw .wrongCode }

        let ad = PairingKeySchedule.joinerIdentityAssociatedData(
            messagePrefix: decoded.encodedPrefix(), hello: hello, reply: reply)
        let peer = try keys.openJoinerIdentity(decoded.sealedIdentity, associatedData: ad)
        guard peer.publicKey != identity.publicKey else {
            throw .protocolViolation("the joiner presented this device's own public key")
        }
        // X25519(e_I, S_J): equals the joiner's X25519(s_J, E_I) only if it holds s_J.
        guard let joinerShared = PairingSupport.x25519(privateKey: ephemeral.privateKey, publicKey: peer.publicKey) else {
            throw .unprovenKey
        }
        let expectedProof = keys.joinerProof(sharedSecret: joinerShared, staticKey: peer.publicKey, hello: hello, reply: reply)
        guard PairingSupport.constantTimeEqual(expectedProof, decoded.proof) else { throw .unprovenKey }

        guard let ownShared = PairingSupport.x25519(privateKey: identity.keyPair.privateKey, publicKey: joinerEphemeral) else {
            throw .protocolViolation("\(PairingMessageType.hello): the joiner's ephemeral key is a low-order point")
        }
        let prefix = PairingInviterIdentity(sealedIdentity: [], proof: []).encodedPrefix()
        let ownAD = PairingKeySchedule.inviterIdentityAssociatedData(
            messagePrefix: prefix, hello: hello, reply: reply, joinerMessage: message)
        let sealed = try keys.sealInviterIdentity(identity.presented, associatedData: ownAD)
        let proof = keys.inviterProof(sharedSecret: ownShared, staticKey: identity.publicKey, hello: hello,
                                      reply: reply, joinerMessage: message)
        stage = .finished
        let outcome = PairingOutcome(peer: peer, own: identity.presented, isk: keys.isk, transcript: hello + reply)
        return .finished(outcome, send: PairingInviterIdentity(sealedIdentity: sealed, proof: proof).encoded())
    }
}
