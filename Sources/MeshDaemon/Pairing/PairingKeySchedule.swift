import MeshCrypto

/// The keys both sides derive from CPace's session key, and the transcript-bound operations
/// that use them (docs/PAIRING.md, "Key schedule").
///
///     k = HKDF-SHA-256(salt: ci, ikm: ISK, info: "SessionMesh pairing v1 " + label), 32 bytes
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
                                      info: Array("SessionMesh pairing v1 \(label)".utf8))
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
