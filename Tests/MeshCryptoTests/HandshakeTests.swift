import Testing
@testable import MeshCrypto

@Suite struct HandshakeTests {
    static let name = "Noise_IKpsk2_25519_ChaChaPoly_SHA256"

    @Test func responderLearnsInitiatorAndSetsPSKAfterMessageOne() throws {
        let alice = X25519KeyPair.generate(), bob = X25519KeyPair.generate()
        let psk = SecretBytes.random(count: 32)
        var initiator = try NoiseHandshake(protocolName: Self.name, initiator: true, prologue: [1],
                                           localStatic: alice, remoteStatic: bob.publicKey, preSharedKeys: [psk])
        var responder = try NoiseHandshake(protocolName: Self.name, initiator: false, prologue: [1], localStatic: bob)
        let payload = try responder.readMessage(try initiator.writeMessage(payload: Array("hi".utf8)))
        #expect(payload == Array("hi".utf8))
        #expect(responder.remoteStaticPublicKey == alice.publicKey)
        responder.setPreSharedKeys([psk])
        _ = try initiator.readMessage(try responder.writeMessage(payload: []))
        #expect(initiator.isComplete && responder.isComplete)
        #expect(initiator.handshakeHash == responder.handshakeHash)
        var a = try initiator.channelKeys(), b = try responder.channelKeys()
        #expect(try b.datagramReceiver.open(try a.datagramSender.seal([1], associatedData: []), associatedData: []) == [1])
        #expect(try a.streamReceiver.feed(try b.streamSender.seal([2])) == [[2]])
    }

    @Test func wrongPSKFailsTheHandshake() throws {
        let alice = X25519KeyPair.generate(), bob = X25519KeyPair.generate()
        var initiator = try NoiseHandshake(protocolName: Self.name, initiator: true, localStatic: alice,
                                           remoteStatic: bob.publicKey, preSharedKeys: [SecretBytes.random(count: 32)])
        var responder = try NoiseHandshake(protocolName: Self.name, initiator: false, localStatic: bob,
                                           preSharedKeys: [SecretBytes.random(count: 32)])
        _ = try responder.readMessage(try initiator.writeMessage(payload: []))
        let reply = try responder.writeMessage(payload: [])
        let error = #expect(throws: CryptoError.self) { try initiator.readMessage(reply) }
        #expect(error?.code == .authenticationFailed)
        #expect(!initiator.isComplete)
        #expect(throws: CryptoError.self) { try initiator.channelKeys() }
    }

    @Test func truncatedOrTamperedMessagesAreRejected() throws {
        let bob = X25519KeyPair.generate()
        var initiator = try NoiseHandshake(protocolName: Self.name, initiator: true, localStatic: .generate(),
                                           remoteStatic: bob.publicKey, preSharedKeys: [.random(count: 32)])
        let message = try initiator.writeMessage(payload: [])
        for cut in [0, 10, 32, 60, message.count - 1] {
            var responder = try NoiseHandshake(protocolName: Self.name, initiator: false, localStatic: bob)
            #expect(throws: CryptoError.self) { try responder.readMessage(Array(message[0..<cut])) }
        }
        var flipped = message
        flipped[40] ^= 1
        var responder = try NoiseHandshake(protocolName: Self.name, initiator: false, localStatic: bob)
        #expect(throws: CryptoError.self) { try responder.readMessage(flipped) }
        // A failed handshake stays failed.
        #expect(throws: CryptoError.self) { try responder.readMessage(message) }
    }

    @Test func misuseIsAnErrorNotACrash() throws {
        #expect(throws: CryptoError.self) { try NoiseHandshake(protocolName: "Noise_ZZ_25519_ChaChaPoly_SHA256", initiator: true) }
        #expect(throws: CryptoError.self) { try NoiseHandshake(protocolName: "Noise_NN_448_AESGCM_SHA512", initiator: true) }
        #expect(throws: CryptoError.self) { try NoiseHandshake(protocolName: "Noise_IK_25519_ChaChaPoly_SHA256", initiator: true) }
        var nn = try NoiseHandshake(protocolName: "Noise_NN_25519_ChaChaPoly_SHA256", initiator: false)
        #expect(throws: CryptoError.self) { try nn.writeMessage(payload: []) }
    }

    @Test func everyTablePatternCompletesWithPSKModifiers() throws {
        for base in NoisePattern.table.keys.sorted() {
            for modifiers in ["", "psk0", "psk1", "psk0+psk2"] {
                guard let pattern = NoisePattern.named(base + modifiers) else { continue }
                let a = X25519KeyPair.generate(), b = X25519KeyPair.generate()
                let psks = (0..<2).map { _ in SecretBytes.random(count: 32) }
                let name = "Noise_\(base + modifiers)_25519_ChaChaPoly_SHA256"
                var i = try NoiseHandshake(protocolName: name, initiator: true, localStatic: a,
                                           remoteStatic: pattern.responderPreMessage.isEmpty ? nil : b.publicKey,
                                           preSharedKeys: psks)
                var r = try NoiseHandshake(protocolName: name, initiator: false, localStatic: b,
                                           remoteStatic: pattern.initiatorPreMessage.isEmpty ? nil : a.publicKey,
                                           preSharedKeys: psks)
                for index in 0..<pattern.messages.count {
                    if index % 2 == 0 { _ = try r.readMessage(try i.writeMessage(payload: [UInt8(index)])) }
                    else { _ = try i.readMessage(try r.writeMessage(payload: [UInt8(index)])) }
                }
                #expect(i.isComplete && r.isComplete, "\(name)")
                #expect(i.handshakeHash == r.handshakeHash, "\(name)")
            }
        }
    }
}
