import Foundation
import Testing
import MeshCore
import MeshCrypto
import NIOCore
import NIOEmbedded
@testable import MeshDaemon

/// Replayed message 1s, the per-device handshake budget, the stored timestamp and which
/// sources count as paired devices' (`PeerChannels`, `HandshakeReplayCache`,
/// `PairedSourceTable`, `SourceKey`), with explicit times and no sockets.
@Suite("Peer channels: replays, budgets, paired sources")
struct PeerChannelsReplayTests {
    typealias Pair = PeerChannelsTests.Pair
    static let second = PeerChannelsTests.second
    static let body = PeerChannelsTests.body

    @Test func copiesOfMessage1sFromManySourcesCostNoBudgetAndTheRealPeerIsStillAnswered() throws {
        var pair = Pair()
        // Three captured message 1s, each answered once (never confirmed), then replayed
        // 1000 times each within one second, from any number of sources: a MAC seen before is
        // refused before the budgets, so neither budget moves.
        var captured: [[UInt8]] = []
        for index in 0 ..< 3 {
            let (message1, _) = try PeerChannelsTests.start(&pair.alice, pair.bobID, replacingLiveChannel: false, udpPort: 1,
                                                            wall: 100 + Int64(index), now: 0)
            captured.append(Self.body(message1))
            guard case .reply = pair.bob.answerHandshake(Self.body(message1), connectionID: UInt64(index), udpPort: 2, wall: 100, now: 0) else {
                Issue.record("a fresh message 1 was refused")
                return
            }
        }
        var refusedSeen = 0
        let started = ContinuousClock.now
        for round in 0 ..< 1000 {
            for message in captured {
                let now = UInt64(round) * Self.second / 1000
                if case .refused(.seen) = pair.bob.answerHandshake(message, connectionID: 100, udpPort: 2, wall: 100, now: now) {
                    refusedSeen += 1
                }
            }
        }
        let elapsed = ContinuousClock.now - started
        #expect(refusedSeen == 3000)
        print("figure: 3000 copies of 3 message 1s refused as seen in \(elapsed) (no X25519, no budget token)")
        // The real Alice, a second later: answered and confirmed.
        try pair.connect(wall: 200, now: Self.second)
        #expect(pair.bob.peers[pair.aliceID]?.channel != nil)
        #expect(pair.bob.peers[pair.aliceID]?.recentHandshakeMacs.count == 4)
    }

    @Test func theReplayCacheIsBounded() {
        var cache = HandshakeReplayCache(capacity: 4)
        var admitted = 0
        for value in 0 ..< 10 where cache.admit([UInt8(value)]) { admitted += 1 }
        #expect(admitted == 10 && cache.count == 4)
        let nine = cache.admit([9]), six = cache.admit([6]), zero = cache.admit([0])
        #expect(!nine && !six)
        #expect(zero, "the oldest were forgotten")
    }

    @Test func oneDevicesFreshMessage1sSpendOnlyItsOwnBudget() throws {
        // Bob is paired with Alice and Carol; Alice's key floods Bob with distinct message 1s
        // (an uncached replay costs the same): past her own burst they are refused, and Carol
        // is still answered at once.
        var pair = Pair()
        let carolKeys = X25519KeyPair.generate()
        let carolPairKey = SecretBytes.random(count: 32)
        let bobKeys = pair.bob.localKeys
        var records = pair.bob.records
        records.append(PairedPeer(publicKey: carolKeys.publicKey, name: "carol", pairKey: carolPairKey, addresses: [], pairedAt: 1))
        pair.bob = PeerChannels(localKeys: bobKeys, tuning: ChannelTuning(), records: records, leaseSeconds: 3)
        var carol = PeerChannels(localKeys: carolKeys, tuning: ChannelTuning(), records: [
            PairedPeer(publicKey: bobKeys.publicKey, name: "bob", pairKey: carolPairKey, addresses: [], pairedAt: 1)], leaseSeconds: 3)
        var answered = 0, peerBusy = 0
        for index in 0 ..< 40 {
            let (message1, _) = try PeerChannelsTests.start(&pair.alice, pair.bobID, replacingLiveChannel: false, udpPort: 1,
                                                            wall: 1_000 + Int64(index), now: 0)
            switch pair.bob.answerHandshake(Self.body(message1), connectionID: UInt64(index), udpPort: 2, wall: 1_000, now: 0) {
            case .reply: answered += 1
            case .refused(.peerBusy): peerBusy += 1
            case .refused(let other): Issue.record("unexpected refusal \(other)")
            }
        }
        let burst = Int(ChannelTuning().handshakeBurstPerPeer)
        #expect(answered == burst && peerBusy == 40 - burst)
        let (fromCarol, _) = try PeerChannelsTests.start(&carol, pair.bobID, replacingLiveChannel: false, udpPort: 1, wall: 1_000, now: 0)
        guard case .reply = pair.bob.answerHandshake(Self.body(fromCarol), connectionID: 99, udpPort: 2, wall: 1_000, now: 0) else {
            Issue.record("Carol was refused while Alice's budget was spent")
            return
        }
        print("figure: 40 message 1s of one device at once: \(answered) answered, \(peerBusy) refused (peer_busy); another device answered")
        // A second later her budget has refilled by its rate.
        let (later, _) = try PeerChannelsTests.start(&pair.alice, pair.bobID, replacingLiveChannel: false, udpPort: 1, wall: 2_000, now: Self.second)
        guard case .reply = pair.bob.answerHandshake(Self.body(later), connectionID: 100, udpPort: 2, wall: 2_000, now: Self.second) else {
            Issue.record("Alice's budget did not refill")
            return
        }
    }

    @Test func theConfirmedTimestampSurvivesTheStoreAndOldFilesLoad() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("replay-\(UInt32.random(in: 0 ... .max))").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let store = PairedDeviceStore(stateDirectory: folder)
        var pair = Pair()
        try pair.connect(wall: 1_732_233_700_000_000_000, now: 0)
        try store.save(pair.bob.records)
        let loaded = try store.load()
        #expect(loaded.first?.handshakeTimestamp == 1_732_233_700_000_000_000)
        // A record never confirmed has no field, and loads as none.
        try store.save(pair.alice.records)
        let text = try String(contentsOfFile: store.path, encoding: .utf8)
        #expect(!text.contains("handshakeTimestamp"))
        #expect(try store.load().first?.handshakeTimestamp == nil)
    }

    @Test(arguments: [
        ("198.18.0.7", "198.18.0.7"),
        ("::ffff:198.18.0.7", "198.18.0.7"),
        ("::FFFF:c612:7", "198.18.0.7"),
        ("2001:db8:1:2::5", "2001:db8:1:2::/64"),
        ("2001:db8:1:2:aaaa:bbbb:cccc:dddd", "2001:db8:1:2::/64"),
        ("fe80::1%eth0", "fe80:0:0:0::/64"),
        ("::1", "0:0:0:0::/64"),
        ("?", "?"),
    ])
    func sourceKeys(host: String, key: String) {
        #expect(SourceKey.of(host) == key)
    }

    @Test func onlyAnAuthenticatedHandshakeMakesAnAddressAPairedDevicesAndItExpires() throws {
        var tuning = ChannelTuning()
        tuning.pairedSourceLifetime = 60
        var pair = Pair(tuning: tuning)
        // Nothing yet: not the stored addresses, not what mDNS might say.
        pair.bob.peers[pair.aliceID]?.record.learn(address: "198.18.0.1:47470", source: .pairing)
        #expect(!pair.bob.isPairedDeviceAddress("198.18.0.1", now: 0))
        // A channel installed on a connection from Alice's address (an IPv4-mapped one).
        try pair.connect(wall: 10, now: 0)
        let connection = EmbeddedChannel()
        connection.remoteAddress = try SocketAddress(ipAddress: "::ffff:198.18.0.1", port: 40000)
        guard let channel = pair.bob.peers[pair.aliceID]?.channel else { throw PeerChannelsTests.Failure("no channel") }
        _ = pair.bob.install(pair.aliceID, channel: channel, connection: ChannelConnection(id: 8, path: TCPStreamPath(connection), locallyInitiated: false),
                             datagramEndpoint: nil, now: Self.second, wallSeconds: 2)
        #expect(pair.bob.isPairedDeviceAddress("198.18.0.1", now: Self.second))
        #expect(pair.bob.isPairedDeviceAddress("::ffff:198.18.0.1", now: Self.second))
        #expect(!pair.bob.isPairedDeviceAddress("198.18.0.3", now: Self.second))
        // The channel goes down: the address counts until the lifetime passed, then not.
        _ = pair.bob.drop(pair.aliceID, now: Self.second)
        #expect(pair.bob.isPairedDeviceAddress("198.18.0.1", now: 60 * Self.second))
        #expect(!pair.bob.isPairedDeviceAddress("198.18.0.1", now: 62 * Self.second))
    }

    @Test func thePairedSourceTableIsBoundedPerDeviceAndForgetsUnpairedOnes() {
        let alice = DeviceID(publicKey: X25519KeyPair.generate().publicKey)
        let bob = DeviceID(publicKey: X25519KeyPair.generate().publicKey)
        var table = PairedSourceTable(lifetimeNanoseconds: 1_000, perPeer: 3, capacity: 5)
        for index in 0 ..< 6 { table.record("198.18.0.\(index)", peer: alice, now: UInt64(index)) }
        #expect(table.count == 3)
        #expect(!table.contains("198.18.0.0", now: 10) && table.contains("198.18.0.5", now: 10))
        for index in 0 ..< 3 { table.record("198.18.1.\(index)", peer: bob, now: UInt64(10 + index)) }
        #expect(table.count == 5)
        table.forget(alice)
        #expect(table.count == 3 && !table.contains("198.18.0.5", now: 20))
    }
}

/// The connection table keyed by `SourceKey`, as `ConnectionGate.admit` uses it.
@Suite("Connection table: sources by SourceKey")
struct ConnectionTableSourceKeyTests {
    @Test func oneIPv6PrefixIsOneSourceAndAMappedIPv4AddressIsItsIPv4Address() {
        var table = ConnectionTable(tuning: ChannelTuning())
        // A host rotating through 200 addresses of its /64, one connection each, within a second.
        var admitted = 0, refused = 0
        for index in 0 ..< 200 {
            let host = "2001:db8:7:9:\(String(index, radix: 16)):1:2:3"
            switch table.admit(TCPStreamPath(EmbeddedChannel()), source: SourceKey.of(host), known: false, now: UInt64(index) * 1_000_000) {
            case .admitted: admitted += 1
            case .refused: refused += 1
            }
        }
        #expect(admitted == ChannelTuning().maximumUnauthenticatedPerSource && refused == 196)
        print("figure: 200 connections from 200 addresses of one /64: \(admitted) admitted, \(refused) refused")
        // The same IPv4 host over a dual-stack socket and a plain one: one source.
        for index in 0 ..< 4 {
            let host = index % 2 == 0 ? "::ffff:198.18.0.9" : "198.18.0.9"
            guard case .admitted = table.admit(TCPStreamPath(EmbeddedChannel()), source: SourceKey.of(host), known: false, now: 0) else {
                Issue.record("refused early")
                return
            }
        }
        guard case .refused(.sourceFull) = table.admit(TCPStreamPath(EmbeddedChannel()), source: SourceKey.of("::ffff:198.18.0.9"), known: false, now: 0) else {
            Issue.record("a mapped address was a source of its own")
            return
        }
    }
}
