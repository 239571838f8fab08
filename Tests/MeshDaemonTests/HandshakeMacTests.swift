import MeshCrypto
import Testing
@testable import MeshDaemon

/// The MAC on handshake message 1 (docs/PROTOCOL.md §3), against a vector computed
/// independently with Python's `hmac` and `hashlib`.
@Suite("Handshake message 1 MAC")
struct HandshakeMacTests {
    static func hex(_ text: String) -> [UInt8] {
        text.split(separator: " ").compactMap { UInt8($0, radix: 16) }
    }

    static let pairKey = SecretBytes(Array(0..<32))
    static let responderKey = hex("07 a3 7c bc 14 20 93 c8 b7 55 dc 1b 10 e8 6c b4 26 37 4a d1 6a a8 53 ed 0b df c0 b2 b8 6d 1c 7c")

    @Test("key and MAC match the PROTOCOL.md vector")
    func vector() {
        let key = HandshakeMac.key(pairKey: Self.pairKey, responderPublicKey: Self.responderKey)
        #expect(key == SecretBytes(Self.hex("9e 7d 7f db 0b 9d 16 0f 43 58 66 12 ae 6a 67 00 c1 61 ab 49 a4 48 b9 aa 9e 60 7d 15 4d 61 28 4c")))
        let message1 = Array(UInt8(0)..<112)
        #expect(HandshakeMac.mac(key: key, message1: message1) == Self.hex("03 1e 10 ba 20 bf 58 67 e9 1c 07 d6 13 1d de 49"))
        let body = HandshakeMac.append(to: message1, key: key)
        #expect(body.count == HandshakeMac.frameBodyLength)
        let split = HandshakeMac.split(body)
        #expect(split?.message1 == message1)
        #expect(split.map { HandshakeMac.verify($0.mac, of: $0.message1, key: key) } == true)
    }

    @Test("a MAC under another pair key, for another responder, or over other bytes does not verify; wrong lengths do not split")
    func refusals() {
        let key = HandshakeMac.key(pairKey: Self.pairKey, responderPublicKey: Self.responderKey)
        let message1 = Array(UInt8(0)..<112)
        let mac = HandshakeMac.mac(key: key, message1: message1)
        let otherPair = HandshakeMac.key(pairKey: SecretBytes(Array(1..<33)), responderPublicKey: Self.responderKey)
        let otherResponder = HandshakeMac.key(pairKey: Self.pairKey, responderPublicKey: Array(repeating: 9, count: 32))
        #expect(!HandshakeMac.verify(mac, of: message1, key: otherPair))
        #expect(!HandshakeMac.verify(mac, of: message1, key: otherResponder))
        var flipped = message1
        flipped[50] ^= 1
        #expect(!HandshakeMac.verify(mac, of: flipped, key: key))
        for length in [0, 16, 111, 112, 127, 129, 200] {
            #expect(HandshakeMac.split(Array(repeating: 0, count: length)) == nil, "\(length) bytes")
        }
    }
}
