import Foundation
import MeshCore
import MeshCrypto
import Testing
@testable import MeshDaemon

/// A state folder provisioned ahead of a start (the simulator's daemons) reads back as the
/// daemon would load it: the identity key and the paired devices with their pair keys.
@Suite("Pairing provision")
struct PairingProvisionTests {
    @Test("a provisioned folder loads as the identity and pairings written, and is never overwritten")
    func roundTrip() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("provision-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let identity = try X25519KeyPair(privateKey: SecretBytes([UInt8](repeating: 7, count: 32)))
        let peer = try X25519KeyPair(privateKey: SecretBytes([UInt8](repeating: 8, count: 32)))
        let pairKey = SecretBytes([UInt8](repeating: 9, count: 32))
        let pairing = PairingProvision(publicKey: peer.publicKey, name: "d1", pairKey: pairKey, addresses: ["d1:47470"],
                                       pairedAt: 1_700_000_000)
        try PairingProvision.write(identity: identity, pairings: [pairing], stateDirectory: folder)
        let state = try NodeStateFiles(stateDirectory: folder)
        #expect(state.identity.keyPair.publicKey == identity.publicKey)
        #expect(state.records.count == 1)
        #expect(state.records.first?.deviceID == DeviceID(publicKey: peer.publicKey))
        #expect(state.records.first?.pairKey == pairKey)
        #expect(state.records.first?.addresses == [PeerAddress(address: "d1:47470", source: .pairing)])
        #expect(throws: (any Error).self) { try PairingProvision.write(identity: peer, pairings: [], stateDirectory: folder) }
        #expect(try NodeStateFiles(stateDirectory: folder).identity.keyPair.publicKey == identity.publicKey)
    }
}
