import Foundation
import Testing
@testable import MeshCrypto

@Suite struct DeviceIdentityTests {
    /// A fresh private directory under the system temp dir.
    func directory() throws -> String {
        let path = NSTemporaryDirectory() + "meshcrypto-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false,
                                                attributes: [.posixPermissions: 0o700])
        return path
    }

    func mode(_ path: String) throws -> Int {
        (try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) ?? -1
    }

    @Test func createsOnceWithMode0600ThenLoadsTheSameKey() throws {
        let dir = try directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/device.key"
        let first = try DeviceIdentity.loadOrCreate(at: path)
        #expect(try mode(path) == 0o600)
        let second = try DeviceIdentity.loadOrCreate(at: path)
        #expect(second.keyPair.publicKey == first.keyPair.publicKey)
        #expect(second.deviceID == first.deviceID)
        // No temporary files are left behind.
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == ["device.key"])
    }

    @Test func groupReadableFileIsRefusedAndKept() throws {
        let dir = try directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/device.key"
        _ = try DeviceIdentity.loadOrCreate(at: path)
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        try FileManager.default.setAttributes([.posixPermissions: 0o640], ofItemAtPath: path)
        let error = #expect(throws: CryptoError.self) { try DeviceIdentity.loadOrCreate(at: path) }
        #expect(error?.code == .insecureKeyFile)
        #expect(error?.message.contains("chmod 600") == true)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
        #expect(try mode(path) == 0o640)
    }

    @Test func truncatedOrCorruptFileIsRefusedAndNeverReplaced() throws {
        let dir = try directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/device.key"
        _ = try DeviceIdentity.loadOrCreate(at: path)
        let original = try Data(contentsOf: URL(fileURLWithPath: path))
        let damaged: [(Data, String)] = [
            (Data(), "truncated"),
            (original.prefix(40), "truncated"),
            (original + Data([0]), "longer"),
            (Data(original.map { $0 ^ 0x55 }), "not a SessionMesh"),
            ({ var d = original; d[20] ^= 1; return d }(), "corrupt"),
        ]
        for (bytes, phrase) in damaged {
            try bytes.write(to: URL(fileURLWithPath: path))
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
            let error = #expect(throws: CryptoError.self) { try DeviceIdentity.loadOrCreate(at: path) }
            #expect(error?.code == .corruptKeyFile)
            #expect(error?.message.contains(phrase) == true, "\(error?.message ?? "")")
            #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == bytes)
        }
    }

    @Test func missingDirectoryIsAClearError() {
        let error = #expect(throws: CryptoError.self) {
            try DeviceIdentity.loadOrCreate(at: "/nonexistent-\(UUID().uuidString)/device.key")
        }
        #expect(error?.code == .keyFileIO)
    }

    @Test func symbolicLinkIsRefused() throws {
        let dir = try directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        _ = try DeviceIdentity.loadOrCreate(at: dir + "/real.key")
        try FileManager.default.createSymbolicLink(atPath: dir + "/link.key", withDestinationPath: dir + "/real.key")
        let error = #expect(throws: CryptoError.self) { try DeviceIdentity.loadOrCreate(at: dir + "/link.key") }
        #expect(error?.code == .insecureKeyFile)
    }
}
