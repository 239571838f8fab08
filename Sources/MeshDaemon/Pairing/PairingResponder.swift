import MeshCrypto

/// The inviter's side of one pairing attempt (CPace responder; it accepted the connection).
///
/// Obtain one from ``PairingInvitationState/beginAttempt(at:identity:)``. Feed each message
/// from the joiner to ``receive(_:)``: message 1 returns `.send(message 2)`, message 3 returns
/// `.finished(outcome, send: message 4)`. Before writing message 4, call
/// ``PairingInvitationState/attemptSucceeded()`` and write it only when that returns `true`.
/// When `receive` throws, or the joiner goes silent or disconnects, close the connection and
/// call ``PairingInvitationState/attemptFailed()``.
public struct PairingResponder: Sendable {
    private enum Stage: Sendable {
        case awaitingHello(PairingCode)
        case awaitingConfirmation(PairingKeySchedule, hello: [UInt8], reply: [UInt8])
        case finished
        case failed
    }

    private let identity: PairingIdentity
    private var stage: Stage

    /// A responder for `code`, answering as `identity` (already validated).
    init(code: PairingCode, identity: PairingIdentity) {
        self.identity = identity
        stage = .awaitingHello(code)
    }

    /// Feeds the joiner's next message.
    ///
    /// Throws ``PairingError/wrongCode`` when the joiner's confirmation (message 3) does not
    /// verify — the joiner used another code, or someone is guessing — and `.malformed` /
    /// `.protocolViolation` / `.unsupportedVersion` for a bad or unexpected message. Either way
    /// the attempt is over: close the connection and count a failed attempt. After a throw,
    /// the responder refuses everything.
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
        case .awaitingConfirmation(let keys, let hello, let reply):
            return try receiveConfirmation(message, keys: keys, hello: hello, reply: reply)
        case .finished:
            throw .protocolViolation("received a message after pairing finished")
        case .failed:
            throw .protocolViolation("received a message after the attempt failed")
        }
    }

    private mutating func receiveHello(_ message: [UInt8], code: PairingCode) throws(PairingError) -> PairingStep {
        let hello = try PairingHello(decoding: message)
        guard hello.associatedData == PairingProtocol.joinerAssociatedData else {
            throw .protocolViolation("\(PairingMessageType.hello): unexpected CPace associated data")
        }
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
        var reply = PairingInviterConfirmation(share: cpace.publicShare,
                                               associatedData: PairingProtocol.inviterAssociatedData,
                                               confirmation: [])
        reply.confirmation = keys.inviterConfirmation(hello: message, replyPrefix: reply.encodedPrefix())
        let outgoing = reply.encoded()
        stage = .awaitingConfirmation(keys, hello: message, reply: outgoing)
        return .send(outgoing)
    }

    private mutating func receiveConfirmation(_ message: [UInt8], keys: PairingKeySchedule,
                                              hello: [UInt8], reply: [UInt8]) throws(PairingError) -> PairingStep {
        let decoded = try PairingJoinerConfirmation(decoding: message)
        let expected = keys.joinerConfirmation(hello: hello, reply: reply)
        guard PairingSupport.constantTimeEqual(expected, decoded.confirmation) else { throw .wrongCode }

        let ad = PairingKeySchedule.joinerIdentityAssociatedData(
            messagePrefix: decoded.encodedPrefix(), hello: hello, reply: reply)
        let peer = try keys.openJoinerIdentity(decoded.sealedIdentity, associatedData: ad)
        guard peer.publicKey != identity.publicKey else {
            throw .protocolViolation("the joiner presented this device's own public key")
        }

        let prefix = PairingInviterIdentity(sealedIdentity: []).encodedPrefix()
        let ownAD = PairingKeySchedule.inviterIdentityAssociatedData(
            messagePrefix: prefix, hello: hello, reply: reply, joinerMessage: message)
        let sealed = try keys.sealInviterIdentity(identity, associatedData: ownAD)
        stage = .finished
        let outcome = PairingOutcome(peer: peer, own: identity, isk: keys.isk, transcript: hello + reply)
        return .finished(outcome, send: PairingInviterIdentity(sealedIdentity: sealed).encoded())
    }
}
