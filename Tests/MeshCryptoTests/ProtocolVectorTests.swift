import Foundation
import Testing
@testable import MeshCrypto

/// The test vectors of docs/PROTOCOL.md ("Test vectors"), computed independently (Python's
/// `cryptography` package and hashlib): the code must produce them, and the page must still
/// show them.
@Suite("docs/PROTOCOL.md test vectors")
struct ProtocolVectorTests {
    static let splitKey = SecretBytes(Array(0..<32))
    static let datagramKey = "74 ec 66 f1 d1 85 b4 e2 50 aa ef d1 5e 02 e8 c4 a5 7e f7 0f fd 12 de 59 97 2b 07 79 ef 68 17 c8"
    static let streamKey = "10 dd 39 86 d0 c7 36 42 58 fc 7d 59 5d 1f 76 11 31 1b 18 17 95 bc d8 c2 04 54 af 20 8f 30 e2 4f"
    static let datagram0 = "01 01 02 03 04 00 00 00 00 00 00 00 00 89 a4 e7 ea 58 fc 56 dc 78 95 50 02 38 5d ea cb e3 54 4d e8 7e"
    static let datagram1 = "01 01 02 03 04 01 00 00 00 00 00 00 00 b1 de cf 6b 56 6f d3 00 86 02 71 27 a3 eb 10 ba b5 83 07 ad e5 fe 11 4e 90"
    static let frame0 = "00 12 c5 a3 7f f3 96 37 41 9f 14 32 14 fa 4e 6b 70 96 fb 8f"
    static let frame1 = "00 14 25 e5 41 8d dd 81 8e 6a c0 fb 28 2f b3 05 5b 3b 19 ca a1 0f"
    static let publicKey = "07 a3 7c bc 14 20 93 c8 b7 55 dc 1b 10 e8 6c b4 26 37 4a d1 6a a8 53 ed 0b df c0 b2 b8 6d 1c 7c"
    static let deviceID = "VKUP75Y-YDWUFSK-FF7U63E-QTKCHXG-EQQNS3Z-6QD25Y7-JSYHIRB-E4VLXWB"
    static let keyFileChecksum = "a6 ff bd 87"

    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined(separator: " ") }

    @Test func pathKeysAreExpandedFromTheSplitKey() {
        #expect(Self.hex(ChannelKeys.derive(Self.splitKey, label: "datagram").unsafeCopy) == Self.datagramKey)
        #expect(Self.hex(ChannelKeys.derive(Self.splitKey, label: "stream").unsafeCopy) == Self.streamKey)
    }

    @Test func datagramsSealAsDrawn() throws {
        var sealer = DatagramSealer(key: ChannelKeys.derive(Self.splitKey, label: "datagram"))
        let header: [UInt8] = [0x01, 0x01, 0x02, 0x03, 0x04]
        let first = try sealer.seal([0x03, 0x00, 0x00, 0x00, 0x07], associatedData: header)
        let second = try sealer.seal([0x01, 0x17, 0x97, 0x9c, 0xfe, 0x3d, 0x85, 0xcd, 0x15], associatedData: header)
        #expect(Self.hex(header + first) == Self.datagram0)
        #expect(Self.hex(header + second) == Self.datagram1)
        var opener = DatagramOpener(key: ChannelKeys.derive(Self.splitKey, label: "datagram"))
        #expect(try opener.open(second, associatedData: header) == [0x01, 0x17, 0x97, 0x9c, 0xfe, 0x3d, 0x85, 0xcd, 0x15])
    }

    @Test func streamFramesSealAsDrawn() throws {
        var sealer = StreamSealer(key: ChannelKeys.derive(Self.splitKey, label: "stream"))
        let first = try sealer.seal([0x0a])
        let second = try sealer.seal([0x05, 0x68, 0x69])
        #expect(Self.hex(first) == Self.frame0)
        #expect(Self.hex(second) == Self.frame1)
        var opener = StreamOpener(key: ChannelKeys.derive(Self.splitKey, label: "stream"))
        #expect(try opener.feed(first + second) == [[0x0a], [0x05, 0x68, 0x69]])
    }

    /// Flags 2–255 are fatal, not skipped: a frame sealed correctly with flag 2 stops the opener.
    @Test func aFrameWithAnUnknownFlagFailsTheStream() throws {
        let key = ChannelKeys.derive(Self.splitKey, label: "stream")
        for flag: UInt8 in [2, 0x80, 255] {
            let plaintext: [UInt8] = [flag, 0x0a]
            let length: [UInt8] = [0x00, UInt8(plaintext.count + 16)]
            let sealed = Sodium.aeadSeal(key: key, counter: 0, associatedData: length, plaintext: plaintext)
            var opener = StreamOpener(key: key)
            #expect(throws: CryptoError.self) { try opener.feed(length + sealed) }
            #expect(throws: CryptoError.self) { try opener.feed(Array(Self.frameBytes(Self.frame0))) }
        }
    }

    @Test func identityVectors() throws {
        let pair = try X25519KeyPair(privateKey: SecretBytes(Array(1...32)))
        #expect(Self.hex(pair.publicKey) == Self.publicKey)
        #expect(DeviceID(publicKey: pair.publicKey).description == Self.deviceID)
        let file = KeyFile.encode(pair)
        #expect(file.count == 73)
        #expect(Self.hex(Array(file[69...])) == Self.keyFileChecksum)
    }

    @Test func thePageShowsEveryVector() throws {
        let page = try Self.compactPage()
        for vector in [Self.datagramKey, Self.streamKey, Self.datagram0, Self.datagram1, Self.frame0, Self.frame1,
                       Self.publicKey, Self.deviceID, Self.keyFileChecksum] {
            #expect(page.contains(Self.compact(vector)), "docs/PROTOCOL.md no longer shows \(vector)")
        }
    }

    static func frameBytes(_ hex: String) -> [UInt8] {
        hex.split(separator: " ").compactMap { UInt8($0, radix: 16) }
    }

    static func compact(_ text: String) -> String {
        String(text.lowercased().unicodeScalars.filter { !CharacterSet.whitespacesAndNewlines.contains($0) }.map(Character.init))
    }

    static func compactPage(file: String = #filePath) throws -> String {
        let root = URL(fileURLWithPath: file).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return compact(try String(contentsOf: root.appendingPathComponent("docs/PROTOCOL.md"), encoding: .utf8))
    }
}
