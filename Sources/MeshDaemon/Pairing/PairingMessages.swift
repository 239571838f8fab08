// The four pairing messages (docs/PAIRING.md has the full diagrams). Every message starts with
//
//     +-------------+----------+
//     | version (1) | type (1) |
//     +-------------+----------+
//
// and is at most `PairingProtocol.maximumMessageSize` bytes. Decoders are pure functions of the
// bytes and strict: a wrong size, an over-long field or a trailing byte throws
// `PairingError.malformed` naming the field.

/// Message 1, joiner → inviter: the joiner's CPace share and its ephemeral X25519 key.
///
///     | v | 1 | sid (16) | Ya (32) | adLen (1) | adJ (adLen <= 64) | E_J (32) |
struct PairingHello: Equatable, Sendable {
    var sessionID: [UInt8]
    var share: [UInt8]
    var associatedData: [UInt8]
    /// The joiner's ephemeral X25519 public key; the inviter proves its static key against it.
    var ephemeral: [UInt8]

    func encoded() -> [UInt8] {
        PairingWireReader.header(.hello) + sessionID + share
            + [UInt8(associatedData.count)] + associatedData + ephemeral
    }

    init(sessionID: [UInt8], share: [UInt8], associatedData: [UInt8], ephemeral: [UInt8]) {
        self.sessionID = sessionID
        self.share = share
        self.associatedData = associatedData
        self.ephemeral = ephemeral
    }

    init(decoding bytes: [UInt8]) throws(PairingError) {
        var reader = try PairingWireReader(bytes, expecting: .hello)
        sessionID = try reader.read(PairingProtocol.sessionIDBytes, "session id")
        share = try reader.read(PairingProtocol.shareBytes, "CPace share Ya")
        associatedData = try reader.readShortField("associated data", limit: PairingProtocol.maximumAssociatedDataBytes)
        ephemeral = try reader.read(PairingProtocol.ephemeralBytes, "ephemeral key E_J")
        try reader.finish()
    }
}

/// Message 2, inviter → joiner: the inviter's CPace share, its ephemeral X25519 key and its
/// key confirmation.
///
///     | v | 2 | Yb (32) | adLen (1) | adI (adLen <= 64) | E_I (32) | confirmI (32) |
struct PairingInviterConfirmation: Equatable, Sendable {
    var share: [UInt8]
    var associatedData: [UInt8]
    /// The inviter's ephemeral X25519 public key; the joiner proves its static key against it.
    var ephemeral: [UInt8]
    var confirmation: [UInt8]

    /// Everything before `confirmI`: what the inviter's confirmation covers.
    func encodedPrefix() -> [UInt8] {
        PairingWireReader.header(.inviterConfirmation) + share
            + [UInt8(associatedData.count)] + associatedData + ephemeral
    }

    func encoded() -> [UInt8] { encodedPrefix() + confirmation }

    init(share: [UInt8], associatedData: [UInt8], ephemeral: [UInt8], confirmation: [UInt8]) {
        self.share = share
        self.associatedData = associatedData
        self.ephemeral = ephemeral
        self.confirmation = confirmation
    }

    init(decoding bytes: [UInt8]) throws(PairingError) {
        var reader = try PairingWireReader(bytes, expecting: .inviterConfirmation)
        share = try reader.read(PairingProtocol.shareBytes, "CPace share Yb")
        associatedData = try reader.readShortField("associated data", limit: PairingProtocol.maximumAssociatedDataBytes)
        ephemeral = try reader.read(PairingProtocol.ephemeralBytes, "ephemeral key E_I")
        confirmation = try reader.read(PairingProtocol.confirmationBytes, "confirmation")
        try reader.finish()
    }
}

/// Message 3, joiner → inviter: the joiner's key confirmation, its sealed identity and its
/// proof that it holds the private key of the public key in that identity.
///
///     | v | 3 | confirmJ (32) | sealed identity (97 + 16 tag) | proofJ (32) |
struct PairingJoinerConfirmation: Equatable, Sendable {
    var confirmation: [UInt8]
    var sealedIdentity: [UInt8]
    var proof: [UInt8]

    /// Everything before the sealed identity: the AEAD's associated data starts with it.
    func encodedPrefix() -> [UInt8] {
        PairingWireReader.header(.joinerConfirmation) + confirmation
    }

    func encoded() -> [UInt8] { encodedPrefix() + sealedIdentity + proof }

    init(confirmation: [UInt8], sealedIdentity: [UInt8], proof: [UInt8]) {
        self.confirmation = confirmation
        self.sealedIdentity = sealedIdentity
        self.proof = proof
    }

    init(decoding bytes: [UInt8]) throws(PairingError) {
        var reader = try PairingWireReader(bytes, expecting: .joinerConfirmation)
        confirmation = try reader.read(PairingProtocol.confirmationBytes, "confirmation")
        sealedIdentity = try reader.read(PairingKeySchedule.sealedIdentityBytes, "sealed identity")
        proof = try reader.read(PairingProtocol.proofBytes, "key proof")
        try reader.finish()
    }
}

/// Message 4, inviter → joiner: the inviter's sealed identity and its proof of possession.
///
///     | v | 4 | sealed identity (97 + 16 tag) | proofI (32) |
struct PairingInviterIdentity: Equatable, Sendable {
    var sealedIdentity: [UInt8]
    var proof: [UInt8]

    func encodedPrefix() -> [UInt8] { PairingWireReader.header(.inviterIdentity) }

    func encoded() -> [UInt8] { encodedPrefix() + sealedIdentity + proof }

    init(sealedIdentity: [UInt8], proof: [UInt8]) {
        self.sealedIdentity = sealedIdentity
        self.proof = proof
    }

    init(decoding bytes: [UInt8]) throws(PairingError) {
        var reader = try PairingWireReader(bytes, expecting: .inviterIdentity)
        sealedIdentity = try reader.read(PairingKeySchedule.sealedIdentityBytes, "sealed identity")
        proof = try reader.read(PairingProtocol.proofBytes, "key proof")
        try reader.finish()
    }
}
