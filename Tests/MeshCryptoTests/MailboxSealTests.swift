import Foundation
import Testing
@testable import MeshCrypto

/// The store-and-forward seal of docs/PROTOCOL.md ("The relay path"): its vectors (computed
/// independently with Python's `cryptography`, `hmac` and `hashlib`, XChaCha20 by its HChaCha20
/// construction, checked against draft-irtf-cfrg-xchacha §2.2.1), and what it refuses.
@Suite("Mailbox seal")
struct MailboxSealTests {
    static let pairKey = SecretBytes(Array(0..<32))
    static let a = try! X25519KeyPair(privateKey: SecretBytes(Array(1...32)))
    static let b = try! X25519KeyPair(privateKey: SecretBytes(Array(33...64)))
    static let nonce = Array(0x40..<0x58).map(UInt8.init)
    static let counter: UInt64 = 1_764_633_600_000_000_000

    static let itemBox = "01 01 18 7d 3c e8 e6 b8 00 00 40 41 42 43 44 45 46 47 48 49 4a 4b 4c 4d 4e 4f 50 51 52 53 54 55 56 57 "
        + "02 09 f8 f1 8b 62 82 0a cf f3 bd 4e 04 f4 a1 94 cf 34 35 2e a1 f9 2d 7c 1d"
    static let ackBox = "01 02 18 7d 3c e8 e6 b8 00 01 40 41 42 43 44 45 46 47 48 49 4a 4b 4c 4d 4e 4f 50 51 52 53 54 55 56 57 "
        + "84 58 0d 68 09 f7 64 d7 ec a8 0f 9d df 1b 45 52 12"

    static var sealOfA: MailboxSeal { MailboxSeal(identity: a, peerPublicKey: b.publicKey, pairKey: pairKey)! }
    static var sealOfB: MailboxSeal { MailboxSeal(identity: b, peerPublicKey: a.publicKey, pairKey: pairKey)! }

    @Test func theBoxesMatchTheVectors() {
        let item = Self.sealOfA.seal([0x04, 0, 0, 0, 0, 0, 0, 0, 5], kind: .item, counter: Self.counter, nonce: Self.nonce)
        #expect(ProtocolVectorTests.hex(item) == Self.itemBox)
        let ack = Self.sealOfB.seal([0xAA], kind: .ack, counter: Self.counter + 1, nonce: Self.nonce)
        #expect(ProtocolVectorTests.hex(ack) == Self.ackBox)
    }

    @Test func theKeysOfThePageFollowTheFormula() throws {
        let shared = try #require(PairingSupport.x25519(privateKey: Self.a.privateKey, publicKey: Self.b.publicKey))
        #expect(ProtocolVectorTests.hex(shared.unsafeCopy)
            == "a8 4d c7 c3 c8 f0 58 b1 b2 dc 4c d1 e9 b5 dc 0a 79 87 f8 8b 6a 95 64 cd e3 39 1f c4 21 15 9e 77")
        let secret = PairingSupport.concatenated([shared, Self.pairKey])
        let salt = Array("SessionMesh relay mailbox v1".utf8)
        let forward = PairingSupport.hkdfSHA256(secret: secret, salt: salt, info: Self.a.publicKey + Self.b.publicKey)
        let backward = PairingSupport.hkdfSHA256(secret: secret, salt: salt, info: Self.b.publicKey + Self.a.publicKey)
        #expect(ProtocolVectorTests.hex(forward.unsafeCopy)
            == "c5 9a ff 6d b9 79 0a 34 74 d2 0d ab 90 ff 8e 19 9b 00 b7 02 12 2f 76 a6 dc 3c fb 44 52 8e b8 b2")
        #expect(ProtocolVectorTests.hex(backward.unsafeCopy)
            == "8f b4 b2 d4 e4 43 0f 84 56 73 e7 11 21 94 08 54 27 ca fe cd f0 8b 68 f5 b8 7d 67 c9 81 f3 0c 8c")
        let page = try ProtocolVectorTests.compactPage()
        #expect(page.contains(ProtocolVectorTests.compact(ProtocolVectorTests.hex(forward.unsafeCopy))))
        #expect(page.contains(ProtocolVectorTests.compact(ProtocolVectorTests.hex(backward.unsafeCopy))))
    }

    @Test func thePageShowsBothBoxes() throws {
        let page = try ProtocolVectorTests.compactPage()
        for box in [Self.itemBox, Self.ackBox] {
            #expect(page.contains(ProtocolVectorTests.compact(box)), "docs/PROTOCOL.md no longer shows \(box)")
        }
    }

    @Test func onlyThePeerOpensABoxAndSeesItsKindAndCounter() throws {
        let box = Self.sealOfA.seal([1, 2, 3], kind: .item, counter: 42)
        #expect(box.count == 3 + MailboxSeal.overhead)
        let opened = try #require(Self.sealOfB.open(box))
        #expect(opened == MailboxSeal.Opened(kind: .item, counter: 42, plaintext: [1, 2, 3]))
        #expect(MailboxSeal.peek(box)! == (MailboxSeal.Kind.item, 42))
        #expect(Self.sealOfA.open(box) == nil, "the sender's own box does not open as one from the peer")
        let stranger = try X25519KeyPair(privateKey: SecretBytes(Array(repeating: 9, count: 32)))
        #expect(MailboxSeal(identity: stranger, peerPublicKey: Self.a.publicKey, pairKey: Self.pairKey)!.open(box) == nil)
        let otherPair = MailboxSeal(identity: Self.b, peerPublicKey: Self.a.publicKey, pairKey: SecretBytes(Array(repeating: 1, count: 32)))!
        #expect(otherPair.open(box) == nil, "the pair key is part of the key")
    }

    @Test func twoBoxesOfTheSameItemDifferAndEveryAlteredByteIsRefused() {
        let first = Self.sealOfA.seal([7, 7], kind: .item, counter: 1)
        #expect(first != Self.sealOfA.seal([7, 7], kind: .item, counter: 1), "random nonces")
        for index in first.indices {
            var altered = first
            altered[index] ^= 0x01
            #expect(Self.sealOfB.open(altered) == nil, "byte \(index)")
        }
        var asAck = first
        asAck[1] = MailboxSeal.Kind.ack.rawValue
        #expect(Self.sealOfB.open(asAck) == nil, "an item never opens as an ack")
        for length in 0..<first.count {
            #expect(Self.sealOfB.open(Array(first.prefix(length))) == nil)
        }
        #expect(Self.sealOfB.open(first + [0]) == nil)
    }

    @Test func keysThatWouldWeakenTheSealAreRefused() {
        #expect(MailboxSeal(identity: Self.a, peerPublicKey: Array(repeating: 0, count: 32), pairKey: Self.pairKey) == nil)
        #expect(MailboxSeal(identity: Self.a, peerPublicKey: [1, 2, 3], pairKey: Self.pairKey) == nil)
        #expect(MailboxSeal(identity: Self.a, peerPublicKey: Self.b.publicKey, pairKey: SecretBytes([1])) == nil)
    }

    @Test func randomBytesNeverTrapAndNeverOpen() {
        var random = SeededGenerator(test: "MailboxSealTests.randomBytesNeverTrapAndNeverOpen")
        for _ in 0..<2_000 {
            var bytes = (0..<Int(random.next() % 120)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            if bytes.count > 2, random.next() % 2 == 0 { bytes[0] = 1; bytes[1] = UInt8(1 + random.next() % 2) }
            #expect(Self.sealOfB.open(bytes) == nil)
        }
    }
}
