import Foundation
import MeshCore
import MeshCrypto
import Testing
@testable import MeshDaemon

/// What the node stores when a pairing finishes, decided without a node: the joiner's
/// refusals, the record `PeerChannels` keeps, and the hint the inviter advertises.
@Suite("Pairing store decisions")
struct PairingStoreDecisionTests {
    static func outcome(_ keys: X25519KeyPair, name: String = "bob") -> PairingOutcome {
        PairingOutcome(peerPublicKey: keys.publicKey, peerName: name, peerDeviceID: DeviceID(publicKey: keys.publicKey),
                       pairKey: SecretBytes.random(count: 32), verification: "1234")
    }

    @Test("the joiner refuses its own key, and an already paired device unless replace")
    func joinerRefusals() throws {
        let own = X25519KeyPair.generate(), bob = X25519KeyPair.generate()
        let itself = #expect(throws: MeshError.self) {
            try PairingJoinRequest.accept(Self.outcome(own), localPublicKey: own.publicKey, existing: nil, replace: true)
        }
        #expect(itself?.kind == .invalidArgument)
        #expect(itself?.message == "that address is this daemon itself")
        let stored = PairedPeer(publicKey: bob.publicKey, name: "bob-as-stored", pairKey: SecretBytes.random(count: 32),
                                addresses: [], pairedAt: 1)
        let again = #expect(throws: MeshError.self) {
            try PairingJoinRequest.accept(Self.outcome(bob), localPublicKey: own.publicKey, existing: stored, replace: false)
        }
        #expect(again?.kind == .alreadyPaired)
        #expect(again?.message.contains("bob-as-stored") == true)
        #expect(again?.message.contains("its pairing here was kept") == true)
        try PairingJoinRequest.accept(Self.outcome(bob), localPublicKey: own.publicKey, existing: stored, replace: true)
        try PairingJoinRequest.accept(Self.outcome(bob), localPublicKey: own.publicKey, existing: nil, replace: false)
    }

    @Test("pairing again keeps the device's addresses, learns the new one, takes the new key and frees old indices")
    func storeReplacesPairing() throws {
        let bob = X25519KeyPair.generate()
        let bobID = DeviceID(publicKey: bob.publicKey)
        let old = PairedPeer(publicKey: bob.publicKey, name: "bob", pairKey: SecretBytes.random(count: 32),
                             addresses: [PeerAddress(address: "10.0.0.2:47470", source: .observed)], pairedAt: 1)
        var channels = PeerChannels(localKeys: X25519KeyPair.generate(), tuning: ChannelTuning(), records: [old], leaseSeconds: 3)
        let index = channels.allocateIndex(for: bobID)
        #expect(channels.indexTable[index] == bobID)

        let outcome = Self.outcome(bob, name: "bob-renamed")
        let record = channels.storePairing(outcome, address: PeerAddress(address: "10.0.0.9:47470", source: .pairing),
                                           pairedAt: 50, leaseSeconds: 3)
        #expect(record.name == "bob-renamed")
        #expect(record.pairedAt == 50)
        #expect(record.pairKey == outcome.pairKey)
        #expect(record.addresses.map(\.address) == ["10.0.0.2:47470", "10.0.0.9:47470"])
        #expect(channels.peers[bobID]?.record.addresses.last?.source == .pairing)
        #expect(channels.peers[bobID]?.channel == nil)
        #expect(channels.indexTable[index] == nil)

        let carol = X25519KeyPair.generate()
        channels.storePairing(Self.outcome(carol, name: "carol"), address: nil, pairedAt: 20, leaseSeconds: 3)
        #expect(channels.records.map(\.name) == ["carol", "bob-renamed"])

        let carolIndex = channels.allocateIndex(for: DeviceID(publicKey: carol.publicKey))
        channels.remove(DeviceID(publicKey: carol.publicKey))
        #expect(channels.records.map(\.name) == ["bob-renamed"])
        #expect(channels.indexTable[carolIndex] == nil)
    }

    @Test("the inviter advertises the live code's hint only while it accepts attempts")
    func advertisedHint() throws {
        let start = PairingFixture.start
        var invitations = PairingInvitations()
        #expect(invitations.advertisedHint(at: start) == nil)
        let code = PairingCode.generate()
        _ = invitations.create(code: code, issuedAt: start, lifetime: 60, allowsReplacing: false)
        #expect(invitations.advertisedHint(at: start) == code.publicHint)
        #expect(invitations.advertisedHint(at: start.addingTimeInterval(61)) == nil)
        let responder = try invitations.beginAttempt(at: start, identity: PairingFixture.identity("alice"), source: "198.18.0.9").get()
        #expect(invitations.complete(responder.attempt, alreadyPaired: false) == .pair)
        #expect(invitations.advertisedHint(at: start) == nil)
        _ = invitations.end()
        #expect(invitations.advertisedHint(at: start) == nil)
    }
}
