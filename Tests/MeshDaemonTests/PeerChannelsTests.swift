import Testing
import MeshCore
import MeshCrypto
import NIOCore
import NIOEmbedded
@testable import MeshDaemon

/// `PeerChannels`, the node's channel decisions, driven with explicit times and no sockets:
/// two values play Alice and Bob and pass each other the bytes a connection would carry.
@Suite("Peer channels")
struct PeerChannelsTests {
    static let second: UInt64 = 1_000_000_000

    /// Alice and Bob, paired with each other, every channel down.
    struct Pair {
        var alice: PeerChannels
        var bob: PeerChannels
        let aliceID: DeviceID
        let bobID: DeviceID

        init(tuning: ChannelTuning = ChannelTuning()) {
            let aliceKeys = X25519KeyPair.generate(), bobKeys = X25519KeyPair.generate()
            let pairKey = SecretBytes.random(count: 32)
            aliceID = DeviceID(publicKey: aliceKeys.publicKey)
            bobID = DeviceID(publicKey: bobKeys.publicKey)
            alice = PeerChannels(localKeys: aliceKeys, tuning: tuning, records: [
                PairedPeer(publicKey: bobKeys.publicKey, name: "bob", pairKey: pairKey, addresses: [], pairedAt: 0)], leaseSeconds: 3)
            bob = PeerChannels(localKeys: bobKeys, tuning: tuning, records: [
                PairedPeer(publicKey: aliceKeys.publicKey, name: "alice", pairKey: pairKey, addresses: [], pairedAt: 0)], leaseSeconds: 3)
        }

        /// Alice dials Bob: message 1 at Alice's wall clock `wall`, answered by Bob at `now`.
        mutating func answer(wall: Int64 = 1_000, now: UInt64 = 0, connection: UInt64 = 7)
            throws -> (PendingInitiator, PeerChannels.ResponderAnswer) {
            let (message1, pending) = try PeerChannelsTests.start(&alice, bobID, replacingLiveChannel: false, udpPort: 4000,
                                                                         wall: wall, now: now)
            return (pending, bob.answerHandshake(body(message1), connectionID: connection, udpPort: 5000, wall: wall, now: now))
        }

        /// A complete handshake: both sides install their channel (Alice initiated it).
        mutating func connect(wall: Int64 = 1_000, now: UInt64 = 0) throws {
            let (initiator, answered) = try answer(wall: wall, now: now)
            guard case .reply(let message2, let responder) = answered else { throw Failure("refused: \(answered)") }
            guard case .established(let aliceChannel, let confirm, let udpPort) =
                    alice.finishHandshake(initiator, message2: body(message2), now: now) else { throw Failure("initiator failed") }
            #expect(udpPort == 5000)
            guard case .confirmed(let bobChannel) = bob.confirmResponder(responder, confirmFrame: body(confirm)) else {
                throw Failure("responder refused the confirm")
            }
            _ = alice.install(bobID, channel: aliceChannel, connection: ChannelConnection(id: 1, path: TCPStreamPath(EmbeddedChannel()), locallyInitiated: true),
                              datagramEndpoint: nil, now: now, wallSeconds: 1)
            _ = bob.install(aliceID, channel: bobChannel, connection: ChannelConnection(id: 7, path: TCPStreamPath(EmbeddedChannel()), locallyInitiated: false),
                            datagramEndpoint: nil, now: now, wallSeconds: 1)
        }
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    /// `startHandshake`, unwrapped (outside `#require`, whose expansion cannot mutate).
    static func start(_ channels: inout PeerChannels, _ peer: DeviceID, replacingLiveChannel: Bool, udpPort: UInt16,
                      wall: Int64, now: UInt64) throws -> ([UInt8], PendingInitiator) {
        guard let started = channels.startHandshake(peer, replacingLiveChannel: replacingLiveChannel, udpPort: udpPort,
                                                    wall: wall, now: now) else { throw Failure("no message 1") }
        return started
    }

    /// The body of one wire frame (its 2-byte length prefix removed).
    static func body(_ frame: [UInt8]) -> [UInt8] { Array(frame.dropFirst(2)) }

    @Test func aHandshakeActivatesBothSidesAndTheirIndicesNameEachOther() throws {
        var pair = Pair()
        try pair.connect()
        let aliceChannel = try #require(pair.alice.peers[pair.bobID]?.channel)
        let bobChannel = try #require(pair.bob.peers[pair.aliceID]?.channel)
        #expect(pair.alice.indexTable[aliceChannel.current.localIndex] == pair.bobID)
        #expect(pair.bob.indexTable[bobChannel.current.localIndex] == pair.aliceID)
        #expect(pair.alice.peers[pair.bobID]?.outgoingHandshakeInFlight == false)
        #expect(pair.bob.peers[pair.aliceID]?.lastInitiationTimestamp == 1_000)
        // What one side seals on the stream the other opens, on the connection it was installed with.
        var sealer = aliceChannel
        let frame = try sealer.sealStream(.application([1, 2, 3]))
        #expect(pair.bob.isCurrent(pair.aliceID, connectionID: 7))
        guard case .opened(let messages) = pair.bob.openStreamFrame(Self.body(frame), from: pair.aliceID, connectionID: 7, now: 5) else {
            Issue.record("frame did not open")
            return
        }
        #expect(messages == [.application([1, 2, 3])])
    }

    @Test func aCopyOfAMessage1IsRefusedAtOnceAndAnOldOneByItsTimestampOnceConfirmed() throws {
        var pair = Pair()
        let (message1, _) = try Self.start(&pair.alice, pair.bobID, replacingLiveChannel: false, udpPort: 1, wall: 50, now: 0)
        guard case .reply(_, let first) = pair.bob.answerHandshake(Self.body(message1), connectionID: 1, udpPort: 2, wall: 50, now: 0) else {
            Issue.record("a fresh message 1 was refused")
            return
        }
        // A copy of the same bytes: its MAC was seen, refused before any X25519.
        guard case .refused(.seen) = pair.bob.answerHandshake(Self.body(message1), connectionID: 2, udpPort: 2, wall: 50, now: 0) else {
            Issue.record("a copy of a message 1 was answered")
            return
        }
        // Nobody confirms: no timestamp is recorded, and no confirm forged from nothing passes.
        guard case .refused(.failed) = pair.bob.confirmResponder(first, confirmFrame: [0, 1, 2]) else {
            Issue.record("a forged confirm passed")
            return
        }
        #expect(pair.bob.peers[pair.aliceID]?.lastInitiationTimestamp == .min)
        pair.bob.responderAbandoned(first)
        #expect(pair.bob.indexTable.isEmpty)
        // A real handshake at a later time; then Bob restarts from its stored records (the
        // MAC cache is gone, the confirmed timestamp is not): the old message 1 is refused by it.
        try pair.connect(wall: 60, now: Self.second)
        var restarted = PeerChannels(localKeys: pair.bob.localKeys, tuning: ChannelTuning(), records: pair.bob.records, leaseSeconds: 3)
        #expect(restarted.peers[pair.aliceID]?.lastInitiationTimestamp == 60)
        guard case .refused(.replay) = restarted.answerHandshake(Self.body(message1), connectionID: 3, udpPort: 2, wall: 70, now: 2 * Self.second) else {
            Issue.record("a replayed message 1 was answered after a restart")
            return
        }
        guard case .refused(.seen) = restarted.answerHandshake(Self.body(message1), connectionID: 4, udpPort: 2, wall: 70, now: 2 * Self.second) else {
            Issue.record("the replay was not remembered")
            return
        }
    }

    @Test func message1FromAnUnpairedKeyOrStampedTooFarAheadIsRefused() throws {
        var pair = Pair()
        var stranger = Pair()
        let (fromStranger, _) = try Self.start(&stranger.alice, stranger.bobID, replacingLiveChannel: false, udpPort: 1,
                                                                             wall: 1, now: 0)
        guard case .refused(.unknownKey) = pair.bob.answerHandshake(Self.body(fromStranger), connectionID: 1, udpPort: 2, wall: 1, now: 0) else {
            Issue.record("a stranger's message 1 was not refused as unknown")
            return
        }
        guard case .refused(.failed) = pair.bob.answerHandshake([1, 2, 3], connectionID: 1, udpPort: 2, wall: 1, now: 0) else {
            Issue.record("a short frame was not refused")
            return
        }
        // Alice's clock is two hours ahead of Bob's: refused, with a warning the first time only.
        let hours2 = 2 * HandshakePayload.maximumLeadNanoseconds
        for (attempt, now) in [(0, UInt64(0)), (1, Self.second)] {
            let (ahead, _) = try Self.start(&pair.alice, pair.bobID, replacingLiveChannel: false, udpPort: 1,
                                                                    wall: hours2 + Int64(attempt), now: now)
            let answer = pair.bob.answerHandshake(Self.body(ahead), connectionID: 1, udpPort: 2, wall: 0, now: now)
            guard case .refused(.future(let peer, let warning)) = answer else {
                Issue.record("a message 1 two hours ahead was answered")
                return
            }
            #expect(peer == pair.aliceID)
            #expect(warning == (attempt == 0 ? 0 : nil))
        }
    }

    @Test func theHandshakeBudgetRefusesBeyondItsBurstUntilItRefills() throws {
        var tuning = ChannelTuning()
        tuning.handshakesPerSecond = 1
        tuning.handshakeBurst = 2
        var pair = Pair(tuning: tuning)
        func attempt(wall: Int64, now: UInt64) throws -> Bool {
            let (_, answer) = try pair.answer(wall: wall, now: now)
            if case .refused(.busy) = answer { return false }
            guard case .reply = answer else { throw Failure("unexpected \(answer)") }
            return true
        }
        #expect(try attempt(wall: 1, now: 0))
        #expect(try attempt(wall: 2, now: 0))
        #expect(try attempt(wall: 3, now: 0) == false)
        #expect(try attempt(wall: 4, now: Self.second))
    }

    @Test func aSimultaneousConnectKeepsTheSameConnectionOnBothSides() throws {
        var pair = Pair()
        // Both dial at once: each has message 1 in flight when the other's arrives.
        let (fromAlice, aliceInitiator) = try Self.start(&pair.alice, pair.bobID, replacingLiveChannel: false, udpPort: 1,
                                                                                  wall: 10, now: 0)
        let (fromBob, bobInitiator) = try Self.start(&pair.bob, pair.aliceID, replacingLiveChannel: false, udpPort: 2,
                                                                            wall: 10, now: 0)
        let bobAnswers = pair.bob.answerHandshake(Self.body(fromAlice), connectionID: 1, udpPort: 2, wall: 10, now: 0)
        let aliceAnswers = pair.alice.answerHandshake(Self.body(fromBob), connectionID: 2, udpPort: 1, wall: 10, now: 0)
        let bobKeeps: Bool, aliceKeeps: Bool
        switch bobAnswers {
        case .reply: bobKeeps = false
        case .refused(.lostSimultaneousConnect(let peer)): #expect(peer == pair.aliceID); bobKeeps = true
        case .refused(let other): throw Failure("unexpected \(other)")
        }
        switch aliceAnswers {
        case .reply: aliceKeeps = false
        case .refused(.lostSimultaneousConnect(let peer)): #expect(peer == pair.bobID); aliceKeeps = true
        case .refused(let other): throw Failure("unexpected \(other)")
        }
        // Exactly one side keeps its own connection: the other answers it.
        #expect(bobKeeps != aliceKeeps)
        pair.alice.initiatorEnded(aliceInitiator)
        pair.bob.initiatorEnded(bobInitiator)
        #expect(pair.alice.peers[pair.bobID]?.outgoingHandshakeInFlight == false)
        #expect(pair.bob.peers[pair.aliceID]?.outgoingHandshakeInFlight == false)
    }

    @Test func aBadStreamFrameIsRejectedAndAnOldConnectionIsNotCurrent() throws {
        var pair = Pair()
        try pair.connect()
        guard case .rejected = pair.bob.openStreamFrame(Array(repeating: 9, count: 40), from: pair.aliceID, connectionID: 7, now: 1) else {
            Issue.record("a forged frame opened")
            return
        }
        guard case .notCurrent = pair.bob.openStreamFrame([1], from: pair.aliceID, connectionID: 99, now: 1) else {
            Issue.record("a replaced connection was read")
            return
        }
        let result = pair.bob.drop(pair.aliceID, now: 0)
        let dropped = try #require(result)
        #expect(dropped.hadChannel)
        #expect(dropped.connection?.id == 7)
        #expect(pair.bob.indexTable.isEmpty)
        #expect(pair.bob.peers[pair.aliceID]?.lease.isValid(now: 1) == false)
    }

    @Test func streamMessagesBecomeActionsAndKeepaliveRepliesAreSamples() throws {
        var pair = Pair()
        try pair.connect()
        let bob = pair.bobID
        func action(_ message: ChannelMessage, receivedAt: Int64 = 0) -> ChannelMessageAction {
            pair.alice.streamMessage(message, from: bob, receivedAt: receivedAt, now: 0)
        }
        #expect(action(.pingRequest(id: 4)) == .answerPing(4))
        #expect(action(.keepaliveRequest(t1: 11), receivedAt: 22) == .answerKeepalive(t1: 11, t2: 22))
        #expect(action(.unpaired) == .unpaired)
        #expect(action(.confirm) == ChannelMessageAction.none)
        // A reply to no request of ours is refused as a sample.
        #expect(action(.keepaliveReply(t1: 5, t2: 6, t3: 7), receivedAt: 8) == .keepaliveRefused)
        pair.alice.peers[bob]?.estimator.requestSent(t1: 100)
        #expect(action(.keepaliveReply(t1: 100, t2: 150, t3: 160), receivedAt: 200) == ChannelMessageAction.none)
        #expect(pair.alice.linkEstimate(of: bob, now: 0).roundTripNanoseconds == 90)
    }

    @Test func aRekeyInstallsNewKeysOnBothSides() throws {
        var pair = Pair()
        try pair.connect()
        let (alice, bob) = (pair.aliceID, pair.bobID)
        guard case .proceed(let message1?, false) = pair.alice.startRekey(bob, udpPort: 1, wall: 2, now: Self.second, wallSeconds: 2) else {
            throw Failure("no rekey started")
        }
        guard case .opened(let initiation) = pair.bob.openStreamFrame(Self.body(message1), from: alice, connectionID: 7, now: Self.second),
              case .rekeyInitiation(let m1) = pair.bob.streamMessage(initiation[0], from: alice, receivedAt: 0, now: Self.second),
              case .proceed(let reply?, false) = pair.bob.answerRekey(m1, from: alice, udpPort: 2, wall: 2, now: Self.second, wallSeconds: 2) else {
            throw Failure("the rekey was not answered")
        }
        guard case .opened(let response) = pair.alice.openStreamFrame(Self.body(reply), from: bob, connectionID: 1, now: Self.second),
              case .rekeyResponse(let m2) = pair.alice.streamMessage(response[0], from: bob, receivedAt: 0, now: Self.second),
              case .proceed(let confirm?, true) = pair.alice.completeRekey(m2, from: bob, now: Self.second, wallSeconds: 3) else {
            throw Failure("the rekey did not complete")
        }
        guard case .opened(let confirmation) = pair.bob.openStreamFrame(Self.body(confirm), from: alice, connectionID: 7, now: Self.second),
              case .rekeyConfirm = pair.bob.streamMessage(confirmation[0], from: alice, receivedAt: 0, now: Self.second),
              case .proceed(nil, true) = pair.bob.confirmRekey(from: alice, now: Self.second, wallSeconds: 3) else {
            throw Failure("the rekey was not confirmed")
        }
        #expect(pair.alice.peers[bob]?.channel?.rekeys == 1)
        #expect(pair.bob.peers[alice]?.channel?.rekeys == 1)
        #expect(pair.alice.peers[bob]?.lastHandshakeWall == 3)
        // A confirm with nothing answered fails, and the node closes the channel on that.
        let again = pair.bob.confirmRekey(from: alice, now: Self.second, wallSeconds: 4)
        #expect(again == .failed)
        let stranger = DeviceID(publicKey: X25519KeyPair.generate().publicKey)
        let toStranger = pair.alice.startRekey(stranger, udpPort: 1, wall: 2, now: 0, wallSeconds: 2)
        #expect(toStranger == .noChannel)
    }
}
