/// CPace over ristretto255 with SHA-512 (draft-irtf-cfrg-cpace, `CPACE-RISTR255-SHA512`).
///
/// Each side builds a generator from the password (`g = from_hash(SHA-512(generator_string))`),
/// sends `Y = y·g` for a fresh secret scalar `y`, and combines the peer's share into
/// `K = y·Y_peer`. The intermediate session key is
/// `ISK = SHA-512(lv_cat("CPaceRistretto255_ISK", sid, K) || transcript)`.
/// A share reveals nothing about the password without `y`, so an eavesdropper has nothing to
/// test guesses against offline; an active attacker gets one guess per run (see docs/CRYPTO.md).
///
/// ``finish(peerShare:peerAssociatedData:)`` uses the initiator-responder transcript
/// (`Ya`/`ADa` first); ``finishParallel(peerShare:peerAssociatedData:)`` the ordered
/// concatenation for runs where neither side is the initiator.
public struct CPace: Sendable {
    /// Which share comes first in the initiator-responder transcript.
    public enum Role: Sendable {
        /// Sends first; its share and AD come first in the transcript (`Ya`, `ADa`).
        case initiator
        /// Answers; its share and AD come second (`Yb`, `ADb`).
        case responder
    }

    /// The domain separation identifier for ristretto255.
    static let dsi = Array("CPaceRistretto255".utf8)
    /// SHA-512's input block size, the `s_in_bytes` that sets the zero padding.
    static let hashBlockSize = 128

    let role: Role
    let sessionID: [UInt8]
    let associatedData: [UInt8]
    private let scalar: SecretBytes
    /// This side's share (Ya for the initiator, Yb for the responder), 32 bytes, to send.
    public let publicShare: [UInt8]

    /// Starts a run. `password` is the PRS (the pairing code's secret), `channelIdentifier` the CI
    /// both sides agree on, `sessionID` the sid (may be empty), `associatedData` this side's AD
    /// (sent in clear with the share). Throws only on an internal failure.
    public init(role: Role, password: [UInt8], channelIdentifier: [UInt8], sessionID: [UInt8],
                associatedData: [UInt8]) throws {
        try self.init(role: role, password: password, channelIdentifier: channelIdentifier,
                      sessionID: sessionID, associatedData: associatedData, scalar: Sodium.ristrettoRandomScalar())
    }

    /// Test-vector form with a fixed scalar (32 bytes, little-endian, taken modulo the group order).
    /// Never use a fixed scalar otherwise.
    init(role: Role, password: [UInt8], channelIdentifier: [UInt8], sessionID: [UInt8],
         associatedData: [UInt8], scalar: SecretBytes) throws {
        self.role = role
        self.sessionID = sessionID
        self.associatedData = associatedData
        self.scalar = scalar
        let generator = Self.generator(password: password, channelIdentifier: channelIdentifier, sessionID: sessionID)
        self.publicShare = try Sodium.ristrettoScalarMult(scalar: scalar, point: generator.unsafeCopy).unsafeCopy
    }

    /// The ISK for an initiator-responder run. Throws ``CryptoError/Code/invalidKey`` when the
    /// peer's share is not a valid element, ``CryptoError/Code/weakSharedSecret`` when K is the identity.
    public func finish(peerShare: [UInt8], peerAssociatedData: [UInt8]) throws -> SecretBytes {
        let sharedSecret = try Sodium.ristrettoScalarMult(scalar: scalar, point: peerShare)
        return Self.intermediateSessionKey(sessionID: sessionID, sharedSecret: sharedSecret,
                                           transcript: transcript(peerShare: peerShare, peerAssociatedData: peerAssociatedData))
    }

    /// The ISK for a parallel run (ordered-concatenation transcript; roles do not matter).
    public func finishParallel(peerShare: [UInt8], peerAssociatedData: [UInt8]) throws -> SecretBytes {
        let sharedSecret = try Sodium.ristrettoScalarMult(scalar: scalar, point: peerShare)
        let transcript = Self.orderedConcatenation(Self.lengthValueConcatenation([publicShare, associatedData]),
                                                   Self.lengthValueConcatenation([peerShare, peerAssociatedData]))
        return Self.intermediateSessionKey(sessionID: sessionID, sharedSecret: sharedSecret, transcript: transcript)
    }

    /// The initiator-responder transcript `lv_cat(Ya, ADa) || lv_cat(Yb, ADb)`; both sides get the
    /// same bytes. Public: it feeds ``Pairing/verificationString(isk:transcript:)``.
    public func transcript(peerShare: [UInt8], peerAssociatedData: [UInt8]) -> [UInt8] {
        let own = Self.lengthValueConcatenation([publicShare, associatedData])
        let peer = Self.lengthValueConcatenation([peerShare, peerAssociatedData])
        return role == .initiator ? own + peer : peer + own
    }
}

extension CPace {
    /// `generator_string(DSI, PRS, CI, sid, s_in_bytes)`:
    /// `lv_cat(DSI, PRS, zero_bytes(len_zpad), CI, sid)` with
    /// `len_zpad = max(0, s_in_bytes − 1 − len(prepend_len(PRS)) − len(prepend_len(DSI)))`,
    /// so DSI and PRS fill the first hash block.
    static func generatorString(password: [UInt8], channelIdentifier: [UInt8], sessionID: [UInt8]) -> [UInt8] {
        let prefixed = lengthPrefix(password.count).count + password.count + lengthPrefix(dsi.count).count + dsi.count
        let padding = max(0, hashBlockSize - 1 - prefixed)
        return lengthValueConcatenation([dsi, password, [UInt8](repeating: 0, count: padding), channelIdentifier, sessionID])
    }

    /// `g = from_hash(SHA-512(generator_string)[0..<64])`. Secret: it determines the password.
    static func generator(password: [UInt8], channelIdentifier: [UInt8], sessionID: [UInt8]) -> SecretBytes {
        var string = generatorString(password: password, channelIdentifier: channelIdentifier, sessionID: sessionID)
        defer { Sodium.zero(&string) }
        var hash = Sodium.sha512(string)
        defer { Sodium.zero(&hash) }
        return SecretBytes(hash.withUnsafeBytes { Sodium.ristrettoFromHash($0) })
    }

    /// `ISK = SHA-512(lv_cat(DSI || "_ISK", sid, K) || transcript)`.
    static func intermediateSessionKey(sessionID: [UInt8], sharedSecret: SecretBytes, transcript: [UInt8]) -> SecretBytes {
        var input = lengthValueConcatenation([dsi + Array("_ISK".utf8), sessionID, sharedSecret.unsafeCopy]) + transcript
        defer { Sodium.zero(&input) }
        return SecretBytes(count: Sodium.sha512Length) { out in
            input.withUnsafeBytes { Sodium.sha512([$0], into: out) }
        }
    }

    /// `prepend_len`: the length as unsigned LEB128.
    static func lengthPrefix(_ length: Int) -> [UInt8] {
        var value = UInt64(length), bytes: [UInt8] = []
        repeat {
            var byte = UInt8(value & 0x7F)
            value >>= 7
            if value != 0 { byte |= 0x80 }
            bytes.append(byte)
        } while value != 0
        return bytes
    }

    /// `lv_cat(a, b, …)`: each item prefixed by its LEB128 length.
    static func lengthValueConcatenation(_ items: [[UInt8]]) -> [UInt8] {
        items.reduce(into: []) { $0 += lengthPrefix($1.count) + $1 }
    }

    /// `o_cat(a, b)`: "oc" followed by the lexicographically larger string first.
    static func orderedConcatenation(_ a: [UInt8], _ b: [UInt8]) -> [UInt8] {
        let aIsLarger = isLexicographicallyLarger(a, b)
        return Array("oc".utf8) + (aIsLarger ? a + b : b + a)
    }

    /// The draft's `lexiographically_larger`: the first differing byte decides; on a common
    /// prefix the longer string is larger.
    static func isLexicographicallyLarger(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        for (x, y) in zip(a, b) where x != y { return x > y }
        return a.count > b.count
    }
}
