import MeshCrypto
import Testing
@testable import MeshDaemon

/// The symmetric helpers pairing builds on, against published vectors, and the limits of
/// what pairing accepts as an identity.
@Suite struct PairingProtocolSupportTests {
    static func hex(_ text: String) -> [UInt8] {
        var bytes: [UInt8] = []
        var index = text.startIndex
        while index < text.endIndex {
            let next = text.index(index, offsetBy: 2)
            bytes.append(UInt8(text[index ..< next], radix: 16) ?? 0)
            index = next
        }
        return bytes
    }

    @Test func hkdfMatchesRFC5869TestCase1() {
        let okm = PairingSupport.hkdfSHA256(
            secret: SecretBytes([UInt8](repeating: 0x0B, count: 22)),
            salt: Self.hex("000102030405060708090a0b0c"), info: Self.hex("f0f1f2f3f4f5f6f7f8f9"), count: 42)
        let expected = Self.hex("3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865")
        #expect(okm == SecretBytes(expected))
    }

    @Test func hkdfMatchesRFC5869TestCase3WithEmptySaltAndInfo() {
        let okm = PairingSupport.hkdfSHA256(secret: SecretBytes([UInt8](repeating: 0x0B, count: 22)),
                                           salt: [], info: [], count: 42)
        let expected = Self.hex("8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8")
        #expect(okm == SecretBytes(expected))
    }

    @Test func hmacMatchesRFC4231TestCase2() {
        let tag = PairingSupport.hmacSHA256(key: SecretBytes(Array("Jefe".utf8)),
                                            message: Array("what do ya want for nothing?".utf8))
        #expect(tag == Self.hex("5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"))
    }

    @Test func sealOnceRoundTripsAndRejectsTampering() throws {
        let key = SecretBytes.random(count: 32)
        let sealed = try #require(PairingSupport.sealOnce(key: key, plaintext: [1, 2, 3], associatedData: [9]))
        #expect(sealed.count == 3 + PairingSupport.sealOverhead)
        #expect(PairingSupport.openOnce(key: key, ciphertext: sealed, associatedData: [9]) == [1, 2, 3])
        #expect(PairingSupport.openOnce(key: key, ciphertext: sealed, associatedData: [8]) == nil)
        var flipped = sealed
        flipped[0] ^= 1
        #expect(PairingSupport.openOnce(key: key, ciphertext: flipped, associatedData: [9]) == nil)
        #expect(PairingSupport.openOnce(key: SecretBytes.random(count: 32), ciphertext: sealed, associatedData: [9]) == nil)
        #expect(PairingSupport.openOnce(key: key, ciphertext: Array(sealed.prefix(15)), associatedData: [9]) == nil)
        #expect(PairingSupport.sealOnce(key: SecretBytes.random(count: 16), plaintext: [1], associatedData: []) == nil)
    }

    @Test(arguments: [
        ("", "empty"),
        (String(repeating: "x", count: 65), "65 bytes"),
        (String(repeating: "é", count: 33), "66 bytes"),
        ("evil\u{1B}[2J", "escape"),
        ("line\nbreak", "newline"),
        ("abc\u{202E}cba", "bidi override"),
        ("nul\u{0}", "NUL"),
    ])
    func badLocalNamesAreRefusedBeforeAnyMessage(name: String, why: String) {
        let identity = PairingLocalIdentity(keyPair: X25519KeyPair.generate(), name: name)
        #expect(PairingIdentity.problem(withName: name) != nil, "\(why)")
        let error = #expect(throws: PairingError.self) { _ = try PairingJoiner(code: PairingCode.generate(), identity: identity) }
        #expect(error?.code == .invalidIdentity)
    }

    @Test func badKeysAreRefused() {
        for key in [[UInt8](repeating: 1, count: 31), [UInt8](repeating: 0, count: 32), []] {
            #expect(PairingIdentity.problem(withPublicKey: key) != nil)
        }
        var invitation = PairingInvitationState(code: PairingCode.generate(), issuedAt: PairingFixture.start, lifetime: 60)
        let badName = PairingLocalIdentity(keyPair: X25519KeyPair.generate(), name: "")
        #expect(throws: PairingError.self) { _ = try invitation.beginAttempt(at: PairingFixture.start, identity: badName, source: "198.18.0.9") }
        #expect(invitation.attemptsInProgress == 0)
    }

    @Test func longestNamesRoundTripAndMessagesStayWithinTheirFixedSizes() throws {
        let longName = String(repeating: "é", count: 32)  // 64 UTF-8 bytes
        #expect(longName.utf8.count == PairingProtocol.maximumNameBytes)
        let code = PairingCode.generate()
        var joiner = try PairingJoiner(code: code, identity: PairingFixture.identity(longName))
        var responder = PairingResponder(code: code, identity: PairingFixture.identity("a"))
        let run = try PairingFixture.run(joiner: &joiner, responder: &responder)
        #expect(run.inviterOutcome.peerName == longName)
        #expect(run.joinerOutcome.peerName == "a")
        let hello = 2 + 16 + 32 + 1 + PairingProtocol.joinerAssociatedData.count + 32
        let reply = 2 + 32 + 1 + PairingProtocol.inviterAssociatedData.count + 32 + 32
        #expect(run.messages.map(\.count) == [hello, reply, 2 + 32 + 113 + 32, 2 + 113 + 32])
        #expect(run.messages.map(\.count) == [101, 118, 179, 147])  // as docs/PAIRING.md states
        #expect(run.messages.allSatisfy { $0.count <= PairingProtocol.maximumMessageSize })
    }
}
