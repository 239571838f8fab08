import Foundation
import MeshCrypto
import Testing
@testable import MeshDaemon

/// Pair keys reach and leave `paired-devices.json` without a String copy of their base64, and
/// files written by earlier versions (JSONEncoder's escaped "\/") still load.
@Suite struct PairKeyFieldsTests {
    @Test func secretBase64MatchesFoundationForEveryLengthAndRandomBytes() throws {
        var rng = SeededGenerator(seed: SeededGenerator.seed(for: "secretBase64MatchesFoundation"))
        for count in 0 ... 70 {
            let bytes = (0 ..< count).map { _ in UInt8.random(in: 0 ... 255, using: &rng) }
            var encoded = [UInt8](repeating: 0, count: SecretBase64.encodedLength(of: count))
            #expect(encoded.withUnsafeMutableBytes { SecretBase64.encode(SecretBytes(bytes), into: $0) })
            #expect(String(decoding: encoded, as: UTF8.self) == Data(bytes).base64EncodedString())
            let decoded = try #require(encoded.withUnsafeBytes { SecretBase64.decode($0) })
            #expect(decoded == SecretBytes(bytes))
        }
        for bad in ["A", "AB=C", "A===", "AB*=", "ABC=D", " ABC"] {
            #expect(Array(bad.utf8).withUnsafeBytes { SecretBase64.decode($0) } == nil, "\(bad)")
        }
    }

    static func peer(_ name: String) -> PairedPeer {
        PairedPeer(publicKey: X25519KeyPair.generate().publicKey, name: name, pairKey: SecretBytes.random(count: 32),
                   addresses: [], pairedAt: 1_800_000_000)
    }

    @Test func savedKeysLoadBackAndNamesThatLookLikeKeysStayNames() throws {
        let folder = NSTemporaryDirectory() + "pairkeys-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let store = PairedDeviceStore(stateDirectory: folder)
        let peers = [Self.peer("plain"), Self.peer(#""pairKey": "AAAA""#), Self.peer("PK0X" + String(repeating: "X", count: 40)),
                     Self.peer("{\"pairKey\":\"x\"}")]
        try store.save(peers)
        let loaded = try store.load()
        #expect(loaded.map(\.name) == peers.map(\.name))
        #expect(loaded.map(\.pairKey) == peers.map(\.pairKey))
        // The file holds each key exactly as standard base64.
        let text = try String(contentsOfFile: store.path, encoding: .utf8)
        for peer in peers {
            let base64 = peer.pairKey.withUnsafeBytes { Data($0).base64EncodedString() }
            #expect(text.contains("\"" + base64 + "\""))
        }
    }

    @Test func aFileWrittenWithEscapedSlashesStillLoads() throws {
        let folder = NSTemporaryDirectory() + "pairkeys-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        // A key whose base64 has slashes, written the way JSONEncoder writes it ("\/").
        let key = [UInt8](repeating: 0xFF, count: 32)
        let base64 = Data(key).base64EncodedString()
        #expect(base64.contains("/"))
        let escaped = base64.replacingOccurrences(of: "/", with: "\\/")
        let publicKey = X25519KeyPair.generate().publicKey
        let id = DeviceID(publicKey: publicKey).description
        let json = """
            {"version": 1, "devices": [{"deviceID": "\(id)", "publicKey": "\(Data(publicKey).base64EncodedString().replacingOccurrences(of: "/", with: "\\/"))",
             "name": "old", "pairKey" : "\(escaped)", "addresses": [], "pairedAt": 1}]}
            """
        let path = folder + "/" + PairedDeviceStore.fileName
        #expect(FileManager.default.createFile(atPath: path, contents: Data(json.utf8), attributes: [.posixPermissions: 0o600]))
        let loaded = try PairedDeviceStore(stateDirectory: folder).load()
        #expect(loaded.first?.pairKey == SecretBytes(key))
    }

    @Test func extractBlanksValuesAndIgnoresTextThatIsNotAMember() throws {
        var json = Array(#"{"a": "\"pairKey\": \"QUJD\"", "list": ["pairKey"], "pairKey": "QUJD"}"#.utf8)
        let keys = PairKeyFields.extract(from: &json)
        #expect(keys.count == 1)
        #expect(keys.first.flatMap { $0 } == SecretBytes(Array("ABC".utf8)))
        #expect(String(decoding: json, as: UTF8.self).hasSuffix(#""pairKey": "AAAA"}"#))
        var broken = Array(#"{"pairKey": "QU\nJD", "pairKey": "QUJ"#.utf8)
        #expect(PairKeyFields.extract(from: &broken).allSatisfy { $0 == nil })
    }
}
