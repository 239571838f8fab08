import Foundation
import MeshCrypto
import MeshLocalAPI
import NIOPosix
import Testing
@testable import MeshDaemon

@Suite("Node state files", .serialized)
struct NodeStoreTests {
    @Test func storedFilesAreOwnerOnly() async throws {
        let bed = NodeTestBed()
        defer { Task { await bed.shutdown() } }
        let alice = try await bed.start(name: "alice")
        let bob = try await bed.start(name: "bob")
        _ = try await bed.pair(alice, bob)
        for node in [alice, bob] {
            for file in ["identity.key", PairedDeviceStore.fileName] {
                let attributes = try FileManager.default.attributesOfItem(atPath: node.stateDirectory + "/" + file)
                let mode = try #require(attributes[.posixPermissions] as? Int)
                #expect(mode == 0o600, "\(file) has mode \(String(mode, radix: 8))")
            }
        }
        let stored = try PairedDeviceStore(stateDirectory: alice.stateDirectory).load()
        #expect(stored.count == 1 && stored.first?.name == "bob")
        let text = try String(contentsOfFile: alice.stateDirectory + "/" + PairedDeviceStore.fileName, encoding: .utf8)
        #expect(!text.contains(".tmp"))
        await bed.shutdown()
    }

    @Test func aCorruptStoreIsAClearErrorAndIsLeftAlone() async throws {
        let bed = NodeTestBed()
        defer { Task { await bed.shutdown() } }
        let folder = bed.temporaryFolder()
        let path = folder + "/" + PairedDeviceStore.fileName
        let garbage = Data("{\"version\": 1, \"devices\": [ {\"oops\"".utf8)
        _ = FileManager.default.createFile(atPath: path, contents: garbage, attributes: [.posixPermissions: 0o600])
        do {
            _ = try MeshNode(configuration: bed.configuration(name: "alice", stateDirectory: folder),
                             logger: NodeTestBed.logger("alice"), eventLoopGroup: bed.group)
            Issue.record("a corrupt store must stop start-up")
        } catch let error as NodeError {
            #expect(error.code == .pairedDevices)
            #expect(error.message.contains(path) && error.message.contains("corrupt"))
        }
        #expect(FileManager.default.contents(atPath: path) == garbage)
        await bed.shutdown()
    }

    @Test func aStoreReadableByOthersIsRefused() throws {
        let folder = NodeTestBed().temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/" + PairedDeviceStore.fileName
        _ = FileManager.default.createFile(atPath: path, contents: Data("{\"version\":1,\"devices\":[]}".utf8),
                                       attributes: [.posixPermissions: 0o644])
        #expect(throws: PeerStoreError.self) { try PairedDeviceStore(stateDirectory: folder).load() }
    }

    @Test func storeRoundTripsPeers() throws {
        let folder = NodeTestBed().temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let store = PairedDeviceStore(stateDirectory: folder)
        let key = X25519KeyPair.generate().publicKey
        var peer = PairedPeer(publicKey: key, name: "bob", pairKey: SecretBytes.random(count: 32), addresses: [], pairedAt: 5)
        peer.learn(address: "127.0.0.1:4000", source: .pairing)
        peer.learn(address: "127.0.0.1:4000", source: .observed)
        try store.save([peer])
        let loaded = try store.load()
        #expect(loaded.count == 1)
        #expect(loaded[0].deviceID == peer.deviceID && loaded[0].pairKey == peer.pairKey)
        #expect(loaded[0].addresses == [PeerAddress(address: "127.0.0.1:4000", source: .pairing)])
    }
}
