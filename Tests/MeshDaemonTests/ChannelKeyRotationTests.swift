import Testing
import MeshCrypto
@testable import MeshDaemon

/// Two `ActiveChannel`s driven against each other, no sockets: handshake, both paths, rekey.
@Suite("Channel handshake and rekey")
struct ChannelKeyRotationTests {
    let alice = X25519KeyPair.generate()
    let bob = X25519KeyPair.generate()
    let pairKey = SecretBytes.random(count: 32)

    func payload(_ index: UInt32, rekey: Bool = false) -> HandshakePayload {
        HandshakePayload(sessionIndex: index, udpPort: 1, wallNanoseconds: 1, isRekey: rekey)
    }

    func connect() throws -> (ActiveChannel, ActiveChannel) {
        let (initiator, message1) = try ChannelHandshake.initiate(localStatic: alice, peerPublicKey: bob.publicKey,
                                                                  pairKey: pairKey, payload: payload(11))
        var handshake = initiator
        var responder = try ChannelHandshake.respond(localStatic: bob, message: message1)
        #expect(responder.initiatorPublicKey == alice.publicKey)
        #expect(responder.payload.sessionIndex == 11)
        let (message2, bobKeys) = try responder.accept(pairKey: pairKey, payload: payload(22))
        let (bobPayload, aliceKeys) = try handshake.readResponse(message2)
        #expect(bobPayload.sessionIndex == 22)
        let tuning = ChannelTuning()
        return (ActiveChannel(keys: aliceKeys, localIndex: 11, remoteIndex: 22, locallyInitiated: true, now: 0, tuning: tuning),
                ActiveChannel(keys: bobKeys, localIndex: 22, remoteIndex: 11, locallyInitiated: false, now: 0, tuning: tuning))
    }

    /// Delivers stream bytes (possibly several frames) to `receiver`.
    func deliver(_ bytes: [UInt8], to receiver: inout ActiveChannel) throws -> [ChannelMessage] {
        var reader = WireReader(bytes)
        var messages: [ChannelMessage] = []
        while reader.remaining > 0 {
            let length = Int(try reader.u16("length"))
            var body: [UInt8] = []
            for _ in 0..<length { body.append(try reader.u8("body")) }
            messages += try receiver.openStreamFrame(body)
        }
        return messages
    }

    func exchangeDatagram(_ from: inout ActiveChannel, _ to: inout ActiveChannel, id: UInt32) throws -> ChannelMessage {
        let datagram = try from.sealDatagram(.pingRequest(id: id))
        let header = try #require(DatagramHeader(parsing: datagram))
        return try to.openDatagram(datagram, index: header.receiverIndex)
    }

    @Test func wrongPairKeyFailsTheHandshake() throws {
        var (initiator, message1) = try ChannelHandshake.initiate(localStatic: alice, peerPublicKey: bob.publicKey,
                                                                  pairKey: pairKey, payload: payload(1))
        var responder = try ChannelHandshake.respond(localStatic: bob, message: message1)
        let (message2, _) = try responder.accept(pairKey: SecretBytes.random(count: 32), payload: payload(2))
        #expect(throws: (any Error).self) { try initiator.readResponse(message2) }
    }

    @Test func bothPathsCarryMessagesAndRejectReplays() throws {
        var (a, b) = try connect()
        #expect(try exchangeDatagram(&a, &b, id: 1) == .pingRequest(id: 1))
        let replay = try a.sealDatagram(.pingRequest(id: 2))
        _ = try b.openDatagram(replay, index: 22)
        #expect(throws: (any Error).self) { try b.openDatagram(replay, index: 22) }
        var forged = try a.sealDatagram(.pingRequest(id: 3))
        forged[forged.count - 1] ^= 1
        #expect(throws: (any Error).self) { try b.openDatagram(forged, index: 22) }
        #expect(try deliver(try a.sealStream(.confirm), to: &b) == [.confirm])
        #expect(try deliver(try b.sealStream(.application(Array(repeating: 7, count: 100_000))), to: &a)
                == [.application(Array(repeating: 7, count: 100_000))])
    }

    @Test func rekeySwitchesBothPathsInStep() throws {
        var (a, b) = try connect()
        let start = try a.startRekey(localStatic: alice, peerPublicKey: bob.publicKey, pairKey: pairKey,
                                     newLocalIndex: 33, payload: payload(33, rekey: true))
        guard case .rekeyInitiation(let message1) = try #require(try deliver(start, to: &b).first) else {
            Issue.record("expected a rekey initiation"); return
        }
        let answer = try #require(try b.answerRekey(message1, localStatic: bob, peerPublicKey: alice.publicKey,
                                                    pairKey: pairKey, newLocalIndex: 44,
                                                    payload: payload(44, rekey: true), now: 10))
        // Bob already sends stream frames with the new keys after the answer.
        let afterAnswer = try b.sealStream(.pingRequest(id: 9))
        guard case .rekeyResponse(let message2) = try #require(try deliver(answer, to: &a).first) else {
            Issue.record("expected a rekey response"); return
        }
        let confirm = try a.completeRekey(message2, now: 10)
        #expect(try deliver(afterAnswer, to: &a) == [.pingRequest(id: 9)])
        // A datagram on the new index reaches Bob before the confirm does (UDP overtakes TCP).
        #expect(try exchangeDatagram(&a, &b, id: 5) == .pingRequest(id: 5))
        #expect(try deliver(confirm, to: &b) == [.rekeyConfirm])
        try b.confirmRekey(now: 10)
        #expect(b.current.localIndex == 44 && a.current.localIndex == 33)
        #expect(try exchangeDatagram(&b, &a, id: 6) == .pingRequest(id: 6))
        #expect(try deliver(try a.sealStream(.pingReply(id: 1)), to: &b) == [.pingReply(id: 1)])
        #expect(a.rekeys == 1 && b.rekeys == 1)
    }

    @Test func rekeyCollisionIsWonByThePreferredSide() throws {
        var (a, b) = try connect()
        let aliceIsPreferred = SimultaneousConnectRule.localSideIsPreferred(localKey: alice.publicKey, peerKey: bob.publicKey)
        let fromA = try a.startRekey(localStatic: alice, peerPublicKey: bob.publicKey, pairKey: pairKey,
                                     newLocalIndex: 33, payload: payload(33, rekey: true))
        let fromB = try b.startRekey(localStatic: bob, peerPublicKey: alice.publicKey, pairKey: pairKey,
                                     newLocalIndex: 44, payload: payload(44, rekey: true))
        guard case .rekeyInitiation(let toB) = try deliver(fromA, to: &b).first,
              case .rekeyInitiation(let toA) = try deliver(fromB, to: &a).first else {
            Issue.record("expected rekey initiations"); return
        }
        let answerByA = try a.answerRekey(toA, localStatic: alice, peerPublicKey: bob.publicKey, pairKey: pairKey,
                                          newLocalIndex: 55, payload: payload(55, rekey: true), now: 1)
        let answerByB = try b.answerRekey(toB, localStatic: bob, peerPublicKey: alice.publicKey, pairKey: pairKey,
                                          newLocalIndex: 66, payload: payload(66, rekey: true), now: 1)
        #expect((answerByA == nil) == aliceIsPreferred)
        #expect((answerByB == nil) == !aliceIsPreferred)
    }

    @Test func connectRuleLeavesExactlyOneWinner() {
        let small: [UInt8] = [1, 2, 3], large: [UInt8] = [1, 2, 4]
        // Each side sees the other's attempt while its own is in flight.
        let smallKeepsInbound = SimultaneousConnectRule.candidateWins(candidateIsLocal: false, existingIsLocal: true,
                                                                      localKey: small, peerKey: large)
        let largeKeepsInbound = SimultaneousConnectRule.candidateWins(candidateIsLocal: false, existingIsLocal: true,
                                                                      localKey: large, peerKey: small)
        #expect(!smallKeepsInbound && largeKeepsInbound)
        // A reconnect from the same side always replaces the old channel.
        #expect(SimultaneousConnectRule.candidateWins(candidateIsLocal: false, existingIsLocal: false, localKey: small, peerKey: large))
        #expect(SimultaneousConnectRule.candidateWins(candidateIsLocal: true, existingIsLocal: true, localKey: large, peerKey: small))
    }
}
