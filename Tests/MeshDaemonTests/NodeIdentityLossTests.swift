import Foundation
import MeshCrypto
import Testing
@testable import MeshDaemon

/// A state folder whose identity key went missing while devices are paired: the daemon must not
/// quietly make a new identity (every pairing would stop working, and the peers would only see
/// failed handshakes); it refuses, naming the key and what to do, and touches nothing.
@Suite("Node identity loss")
struct NodeIdentityLossTests {
    @Test func aMissingKeyWithPairedDevicesIsRefusedAndNothingIsCreated() async throws {
        let bed = NodeTestBed()
        let folder = bed.temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let peer = PairedPeer(publicKey: X25519KeyPair.generate().publicKey, name: "bob", pairKey: SecretBytes.random(count: 32),
                              addresses: [], pairedAt: 5)
        try PairedDeviceStore(stateDirectory: folder).save([peer])
        let pairedFile = folder + "/" + PairedDeviceStore.fileName
        let before = FileManager.default.contents(atPath: pairedFile)
        do {
            _ = try MeshNode(configuration: bed.configuration(name: "alice", stateDirectory: folder),
                             logger: NodeTestBed.logger("alice"), eventLoopGroup: bed.group)
            Issue.record("a node started with a new identity over existing pairings")
        } catch let error as NodeError {
            #expect(error.code == .identity)
            #expect(error.message.contains("\(folder)/identity.key is missing, but 1 paired device(s) know this device by it"), "\(error.message)")
        }
        #expect(!FileManager.default.fileExists(atPath: folder + "/identity.key"))
        #expect(FileManager.default.contents(atPath: pairedFile) == before)
        await bed.shutdown()
    }

    @Test func aFreshFolderStillGetsANewIdentity() async throws {
        let bed = NodeTestBed()
        let folder = bed.temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        _ = try MeshNode(configuration: bed.configuration(name: "alice", stateDirectory: folder),
                         logger: NodeTestBed.logger("alice"), eventLoopGroup: bed.group)
        #expect(FileManager.default.fileExists(atPath: folder + "/identity.key"))
        await bed.shutdown()
    }
}
