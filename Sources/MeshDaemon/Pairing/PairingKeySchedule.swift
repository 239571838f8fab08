import MeshCrypto

/// The keys both sides derive from CPace's session key, and the transcript-bound operations
/// that use them (docs/PAIRING.md, "Key schedule").
///
///     k = HKDF-SHA-256(salt: ci, ikm: ISK, info: "SessionMesh pairing v2 " + label), 32 bytes
///
/// with one label per purpose and direction, so no key is ever used twice and a message of one
/// direction can never be accepted in the other.
struct PairingKeySchedule: Sendable {
    /// Length of a sealed identity on the wire.
    static let sealedIdentityBytes = PairingIdentity.plaintextBytes + PairingSupport.sealOverhead

    let isk: SecretBytes
    private let inviterConfirmationKey: SecretBytes
    private let joinerConfirmationKey: SecretBytes
    private let joinerSealingKey: SecretBytes
    private let inviterSealingKey: SecretBytes

    init(isk: SecretBytes) {
        self.isk = isk
        func derive(_ label: String) -> SecretBytes {
            PairingSupport.hkdfSHA256(secret: isk, salt: PairingProtocol.channelIdentifier,
                                      info: Array((PairingProtocol.labelPrefix + label).utf8))
        }
        inviterConfirmationKey = derive("confirm inviter")
        joinerConfirmationKey = derive("confirm joiner")
        joinerSealingKey = derive("seal joiner to inviter")
        inviterSealingKey = derive("seal inviter to joiner")
    }

    /// confirmI = HMAC(k_confirm_inviter, "inviter" || SHA-256(m1 || m2 without confirmI)).
    func inviterConfirmation(hello: [UInt8], replyPrefix: [UInt8]) -> [UInt8] {
        let transcriptHash = PairingSupport.sha256(hello + replyPrefix)
        return PairingSupport.hmacSHA256(key: inviterConfirmationKey, message: Array("inviter".utf8) + transcriptHash)
    }

    /// confirmJ = HMAC(k_confirm_joiner, "joiner" || SHA-256(m1 || m2)).
    func joinerConfirmation(hello: [UInt8], reply: [UInt8]) -> [UInt8] {
        let transcriptHash = PairingSupport.sha256(hello + reply)
        return PairingSupport.hmacSHA256(key: joinerConfirmationKey, message: Array("joiner".utf8) + transcriptHash)
    }

    /// proofJ = HMAC(k_prove_joiner, "joiner" || S_J || SHA-256(m1 || m2)) with
    /// k_prove_joiner = HKDF(salt: ci, ikm: ISK || dh, info: prefix + "prove joiner") and
    /// dh = X25519(s_J, E_I) = X25519(e_I, S_J): only the holder of S_J's private key and the
    /// holder of E_I's private key (the inviter, fresh per attempt) can compute it.
    func joinerProof(sharedSecret dh: SecretBytes, staticKey: [UInt8], hello: [UInt8], reply: [UInt8]) -> [UInt8] {
        proof(label: "prove joiner", role: "joiner", sharedSecret: dh, staticKey: staticKey,
              transcript: hello + reply)
    }

    /// proofI = HMAC(k_prove_inviter, "inviter" || S_I || SHA-256(m1 || m2 || m3)) with
    /// k_prove_inviter = HKDF(salt: ci, ikm: ISK || dh, info: prefix + "prove inviter") and
    /// dh = X25519(s_I, E_J) = X25519(e_J, S_I).
    func inviterProof(sharedSecret dh: SecretBytes, staticKey: [UInt8], hello: [UInt8], reply: [UInt8],
                      joinerMessage: [UInt8]) -> [UInt8] {
        proof(label: "prove inviter", role: "inviter", sharedSecret: dh, staticKey: staticKey,
              transcript: hello + reply + joinerMessage)
    }

    private func proof(label: String, role: String, sharedSecret dh: SecretBytes, staticKey: [UInt8],
                       transcript: [UInt8]) -> [UInt8] {
        let key = PairingSupport.hkdfSHA256(secret: PairingSupport.concatenated([isk, dh]),
                                            salt: PairingProtocol.channelIdentifier,
                                            info: Array((PairingProtocol.labelPrefix + label).utf8))
        return PairingSupport.hmacSHA256(key: key, message: Array(role.utf8) + staticKey + PairingSupport.sha256(transcript))
    }

    /// Associated data of message 3's seal: its header and confirmJ, then SHA-256(m1 || m2).
    static func joinerIdentityAssociatedData(messagePrefix: [UInt8], hello: [UInt8], reply: [UInt8]) -> [UInt8] {
        messagePrefix + PairingSupport.sha256(hello + reply)
    }

    /// Associated data of message 4's seal: its header, then SHA-256(m1 || m2 || m3).
    static func inviterIdentityAssociatedData(messagePrefix: [UInt8], hello: [UInt8], reply: [UInt8],
                                              joinerMessage: [UInt8]) -> [UInt8] {
        messagePrefix + PairingSupport.sha256(hello + reply + joinerMessage)
    }

    func sealJoinerIdentity(_ identity: PairingIdentity, associatedData: [UInt8]) throws(PairingError) -> [UInt8] {
        try Self.seal(identity, key: joinerSealingKey, associatedData: associatedData)
    }

    func sealInviterIdentity(_ identity: PairingIdentity, associatedData: [UInt8]) throws(PairingError) -> [UInt8] {
        try Self.seal(identity, key: inviterSealingKey, associatedData: associatedData)
    }

    func openJoinerIdentity(_ sealed: [UInt8], associatedData: [UInt8]) throws(PairingError) -> PairingIdentity {
        try Self.open(sealed, key: joinerSealingKey, associatedData: associatedData, in: .joinerConfirmation)
    }

    func openInviterIdentity(_ sealed: [UInt8], associatedData: [UInt8]) throws(PairingError) -> PairingIdentity {
        try Self.open(sealed, key: inviterSealingKey, associatedData: associatedData, in: .inviterIdentity)
    }

    private static func seal(_ identity: PairingIdentity, key: SecretBytes,
                             associatedData: [UInt8]) throws(PairingError) -> [UInt8] {
        var plaintext = identity.paddedPlaintext()
        defer { PairingSupport.zero(&plaintext) }
        guard let sealed = PairingSupport.sealOnce(key: key, plaintext: plaintext, associatedData: associatedData),
              sealed.count == sealedIdentityBytes
        else { throw .invalidIdentity("could not seal this device's identity") }
        return sealed
    }

    private static func open(_ sealed: [UInt8], key: SecretBytes, associatedData: [UInt8],
                             in message: PairingMessageType) throws(PairingError) -> PairingIdentity {
        guard let plaintext = PairingSupport.openOnce(key: key, ciphertext: sealed, associatedData: associatedData) else {
            throw .malformed("\(message): the sealed identity failed authentication (corrupted or tampered with)")
        }
        return try PairingIdentity(paddedPlaintext: plaintext, in: message)
    }
}
