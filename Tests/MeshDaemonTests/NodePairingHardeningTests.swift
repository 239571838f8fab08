import Foundation
import MeshCrypto
import MeshLocalAPI
import NIOCore
import NIOPosix
import Testing
@testable import MeshDaemon

/// Pairing between real nodes over loopback TCP, with a hand-driven joiner playing what an
/// attacker on the LAN (or a code holder) would do.
@Suite("Pairing hardening between nodes", .serialized)
struct NodePairingHardeningTests {
    @Test func connectionsWithoutAWellFormedHelloDoNotCountAgainstTheCode() async throws {
        let bed = NodeTestBed()
        defer { Task { await bed.shutdown() } }
        let alice = try await bed.start(name: "alice")
        let bob = try await bed.start(name: "bob")
        let invitation = try await alice.node.createPairingCode(validFor: 60)
        let port = alice.port
        // Four connections that end without a hello (silent, or the preamble only) ...
        let endings: [[UInt8]] = [[], [], RawPairingConnection.preamble, RawPairingConnection.preamble]
        for probe in endings {
            let replied = await offPool { () -> Int in
                guard let connection = RawPairingConnection(port: port) else { return -2 }
                connection.write(probe)
                return connection.finishAndDrain()
            }
            #expect(replied == 0)
        }
        // ... and two whose first frame is not a hello: the daemon closes them in silence.
        let garbage: [[UInt8]] = [[0, 3, 1, 2, 3], [0, 5, PairingProtocol.version, 3, 0, 0, 0]]
        for frame in garbage {
            let replied = await offPool { () -> Int in
                guard let connection = RawPairingConnection(port: port) else { return -2 }
                connection.write(RawPairingConnection.preamble + frame)
                return connection.drainUntilClosed()
            }
            #expect(replied == 0)
        }
        try await waitUntil("both bad first messages counted", timeout: 2) {
            await alice.node.status().counters["pairing.hellos_malformed"] == 2
        }
        #expect(await alice.node.status().counters["pairing.attempts_failed"] == 0)

        async let invited = alice.node.awaitPairing(code: invitation.code)
        let joined = try await bob.node.joinPairing(code: invitation.code, address: alice.address)
        #expect(joined.deviceID == alice.node.deviceID.description)
        #expect(try await invited.deviceID == bob.node.deviceID.description)
        await bed.shutdown()
    }

    @Test func wellFormedHellosThatGoSilentFromThreeSourcesDoCount() async throws {
        let bed = NodeTestBed()
        defer { Task { await bed.shutdown() } }
        let alice = try await bed.start(name: "alice")
        let invitation = try await alice.node.createPairingCode(validFor: 60)
        let waiter = Task { try await alice.node.awaitPairing(code: invitation.code) }
        let code = try PairingCode.parse(invitation.code)
        let port = alice.port
        for source in 1 ... 3 {
            var joiner = try PairingJoiner(code: code, identity: PairingFixture.identity("mallory"))
            let hello = try joiner.start()
            let answered = await offPool { () -> Bool in
                guard let connection = RawPairingConnection(port: port, from: "127.0.0.\(source + 1)") else { return false }
                connection.write(RawPairingConnection.preamble)
                connection.writeFrame(hello)
                let reply = connection.readFrame()
                _ = connection.finishAndDrain()
                return reply != nil
            }
            #expect(answered)
        }
        await #expect(throws: MeshError.pairingCodeInvalidated) { try await waiter.value }
        await bed.shutdown()
    }

    @Test func attemptsUnderAReplacedCodeNeitherPairNorCountAgainstTheNewCode() async throws {
        let bed = NodeTestBed()
        defer { Task { await bed.shutdown() } }
        let alice = try await bed.start(name: "alice")
        let bob = try await bed.start(name: "bob")
        let old = try await alice.node.createPairingCode(validFor: 60)
        let oldCode = try PairingCode.parse(old.code)
        let port = alice.port
        // Three attempts with the right (old) code reach the point where their last message is due.
        var pending: [(RawPairingConnection, [UInt8])] = []
        for source in 1 ... 3 {
            var joiner = try PairingJoiner(code: oldCode, identity: PairingFixture.identity("early"))
            let hello = try joiner.start()
            let (connection, m2) = await offPool { () -> (RawPairingConnection?, [UInt8]?) in
                guard let connection = RawPairingConnection(port: port, from: "127.0.0.\(source + 1)") else { return (nil, nil) }
                connection.write(RawPairingConnection.preamble)
                connection.writeFrame(hello)
                return (connection, connection.readFrame())
            }
            let m2Bytes = try #require(m2)
            guard case .send(let m3) = try joiner.receive(m2Bytes) else { Issue.record("no m3"); return }
            pending.append((try #require(connection), m3))
        }
        let new = try await alice.node.createPairingCode(validFor: 60)
        for (connection, m3) in pending {
            let replied = await offPool { () -> Int in
                connection.writeFrame(m3)
                return connection.finishAndDrain()
            }
            #expect(replied == 0, "an attempt of the replaced code got message 4")
        }
        #expect(await alice.node.peers().isEmpty)
        // Had they counted, the new code would be invalidated now.
        async let invited = alice.node.awaitPairing(code: new.code)
        let joined = try await bob.node.joinPairing(code: new.code, address: alice.address)
        #expect(try await invited.deviceID == bob.node.deviceID.description)
        #expect(joined.deviceID == alice.node.deviceID.description)
        #expect(await alice.node.peers().count == 1)
        await bed.shutdown()
    }

    @Test func aCodeHolderPresentingAPairedDevicesKeyFailsAndThatPairingIsKept() async throws {
        let bed = NodeTestBed()
        defer { Task { await bed.shutdown() } }
        let alice = try await bed.start(name: "alice")
        let bob = try await bed.start(name: "bob")
        _ = try await bed.pair(alice, bob)
        try await waitUntil("channel", timeout: 5) { await bothActive(alice, bob) }
        let bobID = bob.node.deviceID
        let keyBefore = try #require(await alice.node.channels.peers[bobID]?.record.pairKey)

        // Even a code created with --replace does not let a code holder take bob's place.
        let invitation = try await alice.node.createPairingCode(validFor: 60, replace: true)
        let code = try PairingCode.parse(invitation.code)
        let forged = PairingIdentity(publicKey: bob.node.identity.keyPair.publicKey, name: "bob")
        let mallory = try GuessingJoiner(code: code, identity: PairingFixture.identity("mallory"), presenting: forged)
        let port = alice.port
        let (m2, connection) = await offPool { () -> ([UInt8]?, RawPairingConnection?) in
            guard let connection = RawPairingConnection(port: port) else { return (nil, nil) }
            connection.write(RawPairingConnection.preamble)
            connection.writeFrame(mallory.hello)
            return (connection.readFrame(), connection)
        }
        let m3 = try mallory.ignoreConfirmationAndReply(to: try #require(m2))
        let open = try #require(connection)
        let replied = await offPool { () -> Int in
            open.writeFrame(m3)
            return open.finishAndDrain()
        }
        #expect(replied == 0)
        #expect(await alice.node.channels.peers[bobID]?.record.pairKey == keyBefore)
        let counters = await alice.node.status().counters
        #expect(counters["pairings.completed"] == 1)
        #expect(counters["pairing.attempts_failed"] == 1)
        #expect(await bothActive(alice, bob))
        await bed.shutdown()
    }

    @Test func pairingAnAlreadyPairedDeviceAgainNeedsReplaceOnEachSideThatKnowsTheOther() async throws {
        let bed = NodeTestBed()
        defer { Task { await bed.shutdown() } }
        let alice = try await bed.start(name: "alice")
        let bob = try await bed.start(name: "bob")
        _ = try await bed.pair(alice, bob)
        let bobID = bob.node.deviceID, aliceID = alice.node.deviceID
        let aliceKey = try #require(await alice.node.channels.peers[bobID]?.record.pairKey)

        // The inviter knows bob and its code was created without --replace: refused, code withdrawn.
        let plain = try await alice.node.createPairingCode(validFor: 60)
        let waiter = Task { try await alice.node.awaitPairing(code: plain.code) }
        let refused = await #expect(throws: MeshError.self) {
            _ = try await bob.node.joinPairing(code: plain.code, address: alice.address, replace: true)
        }
        #expect(refused?.code == "pairing-refused")
        #expect(refused?.message.contains("--replace") == true)
        let told = await #expect(throws: MeshError.self) { try await waiter.value }
        #expect(told?.code == "already-paired")
        #expect(told?.message.contains("--replace") == true)
        #expect(await alice.node.channels.peers[bobID]?.record.pairKey == aliceKey)

        // With --replace on both sides the pairing is replaced and the channel comes back.
        let replacing = try await alice.node.createPairingCode(validFor: 60, replace: true)
        async let invited = alice.node.awaitPairing(code: replacing.code)
        let joined = try await bob.node.joinPairing(code: replacing.code, address: alice.address, replace: true)
        #expect(joined.deviceID == aliceID.description)
        #expect(try await invited.deviceID == bobID.description)
        let newKey = try #require(await alice.node.channels.peers[bobID]?.record.pairKey)
        #expect(newKey != aliceKey)
        #expect(await bob.node.channels.peers[aliceID]?.record.pairKey == newKey)
        try await waitUntil("channel after replacing", timeout: 5) { await bothActive(alice, bob) }

        // The joiner knows alice and did not ask to replace: it keeps its pairing and says why.
        let third = try await alice.node.createPairingCode(validFor: 60, replace: true)
        let kept = await #expect(throws: MeshError.self) {
            _ = try await bob.node.joinPairing(code: third.code, address: alice.address)
        }
        #expect(kept?.code == "already-paired")
        #expect(await bob.node.channels.peers[aliceID]?.record.pairKey == newKey)
        await bed.shutdown()
    }

    @Test func joiningByCodeAloneContactsAdvertisersThatNeverAnswerWithoutCountingThemAndListsThem() async throws {
        let bed = NodeTestBed()
        defer { Task { await bed.shutdown() } }
        let discovery = FakePeerDiscovery()
        let joiner = try await bed.start(bed.configuration(name: "joiner", stateDirectory: bed.temporaryFolder()),
                                         discovery: discovery)
        let code = PairingCode.generate()
        // Five services copy the public hint; each closes a connection at its first byte (it
        // never answers with a CPace share, so it tests no guess), and counts the connections.
        let guesses = GuessCounter()
        var listeners: [any Channel] = []
        for index in 0 ..< 5 {
            let listener = try await ServerBootstrap(group: bed.group)
                .childChannelInitializer { channel in channel.pipeline.addHandler(CloseOnFirstRead(counter: guesses)) }
                .bind(host: "127.0.0.1", port: 0).get()
            listeners.append(listener)
            discovery.announce(name: "fake-\(index)", deviceID: nil, pairingHint: code.publicHint,
                               port: try #require(listener.localAddress?.port))
        }
        defer { for listener in listeners { listener.close(promise: nil) } }
        let hint = code.publicHint
        try await waitUntil("five advertisers of the hint", timeout: 5) {
            await joiner.node.hop { $0.finder.discovered.inviters(hint: hint).count } == 5
        }
        let error = await #expect(throws: MeshError.self) {
            _ = try await joiner.node.joinPairing(code: code.description, address: nil)
        }
        #expect(error?.code == "inviter-ambiguous")
        #expect(error?.message.contains("--address") == true)
        for listener in listeners {
            let port = try #require(listener.localAddress?.port)
            #expect(error?.message.contains("127.0.0.1:\(port)") == true)
        }
        #expect(guesses.value == 5, "each was contacted once: none could test a guess")
        await bed.shutdown()
    }
}

final class GuessCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    func increment() { lock.withLock { count += 1 } }
    var value: Int { lock.withLock { count } }
}

/// Counts a connection that sent something, then closes it.
final class CloseOnFirstRead: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    let counter: GuessCounter
    private var counted = false
    init(counter: GuessCounter) { self.counter = counter }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if !counted {
            counted = true
            counter.increment()
        }
        context.close(promise: nil)
    }
}
