import MeshCrypto

/// The side that typed the code (CPace initiator; it connects to the inviter).
///
/// Use: `start()` → send; for each reply `receive(_:)` → `.send` (write it, wait) or
/// `.finished` (store the outcome, close). Any thrown error ends the attempt: close the
/// connection and report it; ``PairingError/wrongCode`` means the inviter shows another code,
/// ``PairingError/unprovenKey`` that it knew the code but could not prove it holds the private
/// key of the identity it sent. Parse what the user typed with `PairingCode.parse` first: a typo
/// fails there, before any message is sent.
public struct PairingJoiner: Sendable {
    private enum Stage: Sendable {
        case ready(CPace, hello: [UInt8])
        case awaitingConfirmation(CPace, hello: [UInt8])
        case awaitingIdentity(PairingKeySchedule, hello: [UInt8], reply: [UInt8], joinerMessage: [UInt8])
        case finished
        case failed
    }

    private let identity: PairingLocalIdentity
    /// Fresh per attempt; the inviter proves its static key against its public half (E_J).
    private let ephemeral: X25519KeyPair
    private var stage: Stage

    /// Prepares an attempt with `code` (already parsed) for this device's `identity`.
    ///
    /// Throws ``PairingError/invalidIdentity(_:)`` when the key is not 32 bytes or the name is
    /// empty, longer than 64 UTF-8 bytes or contains control characters; rethrows a
    /// `CryptoError` when CPace cannot start.
    public init(code: PairingCode, identity: PairingLocalIdentity) throws {
        self.identity = try identity.validated()
        ephemeral = X25519KeyPair.generate()
        let sessionID = PairingSupport.randomBytes(count: PairingProtocol.sessionIDBytes)
        var password = code.secret.withUnsafeBytes { Array($0) }
        defer { PairingSupport.zero(&password) }
        let cpace = try CPace(role: .initiator, password: password,
                              channelIdentifier: PairingProtocol.channelIdentifier,
                              sessionID: sessionID, associatedData: PairingProtocol.joinerAssociatedData)
        let hello = PairingHello(sessionID: sessionID, share: cpace.publicShare,
                                 associatedData: PairingProtocol.joinerAssociatedData,
                                 ephemeral: ephemeral.publicKey).encoded()
        stage = .ready(cpace, hello: hello)
    }

    /// The first message (hello) to send. Throws ``PairingError/protocolViolation(_:)`` when
    /// called twice.
    public mutating func start() throws -> [UInt8] {
        guard case .ready(let cpace, let hello) = stage else {
            stage = .failed
            throw PairingError.protocolViolation("start() called after the attempt began")
        }
        stage = .awaitingConfirmation(cpace, hello: hello)
        return hello
    }

    /// Feeds the inviter's next message.
    ///
    /// After message 2 returns `.send(message 3)`; after message 4 returns `.finished` with
    /// nothing left to send. Throws ``PairingError/wrongCode`` when the inviter's confirmation
    /// does not verify, ``PairingError/unprovenKey`` when its proof of possession does not,
    /// `.malformed` / `.protocolViolation` / `.unsupportedVersion` for a bad or unexpected
    /// message. After a throw, the joiner refuses everything.
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
        case .ready:
            throw .protocolViolation("received a message before start()")
        case .awaitingConfirmation(let cpace, let hello):
            return try receiveConfirmation(message, cpace: cpace, hello: hello)
        case .awaitingIdentity(let keys, let hello, let reply, let joinerMessage):
            return try receiveIdentity(message, keys: keys, hello: hello, reply: reply, joinerMessage: joinerMessage)
        case .finished:
            throw .protocolViolation("received a message after pairing finished")
        case .failed:
            throw .protocolViolation("received a message after the attempt failed")
        }
    }

    private mutating func receiveConfirmation(_ message: [UInt8], cpace: CPace,
                                              hello: [UInt8]) throws(PairingError) -> PairingStep {
        let decoded = try PairingInviterConfirmation(decoding: message)
        guard decoded.associatedData == PairingProtocol.inviterAssociatedData else {
            throw .protocolViolation("\(PairingMessageType.inviterConfirmation): unexpected CPace associated data")
        }
        let isk: SecretBytes
        do {
            isk = try cpace.finish(peerShare: decoded.share, peerAssociatedData: decoded.associatedData)
        } catch {
            throw .protocolViolation("\(PairingMessageType.inviterConfirmation): the inviter's CPace share is not acceptable")
        }
        let keys = PairingKeySchedule(isk: isk)
        let expected = keys.inviterConfirmation(hello: hello, replyPrefix: decoded.encodedPrefix())
        guard PairingSupport.constantTimeEqual(expected, decoded.confirmation) else { throw .wrongCode }

        let reply = message  // strict decoding: the bytes as received are the canonical encoding
        guard let shared = PairingSupport.x25519(privateKey: identity.keyPair.privateKey, publicKey: decoded.ephemeral) else {
            throw .protocolViolation("\(PairingMessageType.inviterConfirmation): the inviter's ephemeral key is a low-order point")
        }
        let confirmation = keys.joinerConfirmation(hello: hello, reply: reply)
        let prefix = PairingJoinerConfirmation(confirmation: confirmation, sealedIdentity: [], proof: []).encodedPrefix()
        let ad = PairingKeySchedule.joinerIdentityAssociatedData(messagePrefix: prefix, hello: hello, reply: reply)
        let sealed = try keys.sealJoinerIdentity(identity.presented, associatedData: ad)
        let proof = keys.joinerProof(sharedSecret: shared, staticKey: identity.publicKey, hello: hello, reply: reply)
        let outgoing = PairingJoinerConfirmation(confirmation: confirmation, sealedIdentity: sealed, proof: proof).encoded()
        stage = .awaitingIdentity(keys, hello: hello, reply: reply, joinerMessage: outgoing)
        return .send(outgoing)
    }

    private mutating func receiveIdentity(_ message: [UInt8], keys: PairingKeySchedule, hello: [UInt8],
                                          reply: [UInt8], joinerMessage: [UInt8]) throws(PairingError) -> PairingStep {
        let decoded = try PairingInviterIdentity(decoding: message)
        let ad = PairingKeySchedule.inviterIdentityAssociatedData(
            messagePrefix: decoded.encodedPrefix(), hello: hello, reply: reply, joinerMessage: joinerMessage)
        let peer = try keys.openInviterIdentity(decoded.sealedIdentity, associatedData: ad)
        guard peer.publicKey != identity.publicKey else {
            throw .protocolViolation("the inviter presented this device's own public key")
        }
        // X25519(e_J, S_I): equals the inviter's X25519(s_I, E_J) only if it holds s_I.
        guard let shared = PairingSupport.x25519(privateKey: ephemeral.privateKey, publicKey: peer.publicKey) else {
            throw .unprovenKey
        }
        let expected = keys.inviterProof(sharedSecret: shared, staticKey: peer.publicKey, hello: hello,
                                         reply: reply, joinerMessage: joinerMessage)
        guard PairingSupport.constantTimeEqual(expected, decoded.proof) else { throw .unprovenKey }
        stage = .finished
        return .finished(PairingOutcome(peer: peer, own: identity.presented, isk: keys.isk, transcript: hello + reply), send: nil)
    }
}
