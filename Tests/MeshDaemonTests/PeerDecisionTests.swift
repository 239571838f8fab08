import Testing
import MeshCrypto
@testable import MeshDaemon

/// The per-peer decisions the node's timer pass and dialer act on, driven with explicit times:
/// `PeerRuntime.timerTick` (lease, keepalives, rekey, key expiry) and `DialState`.
@Suite("Peer decisions")
struct PeerDecisionTests {
    /// Deterministic: the backoff's jitter is not under test here.
    struct Fixed: RandomNumberGenerator {
        mutating func next() -> UInt64 { 0x8000_0000_0000_0000 }
    }

    static let second: UInt64 = 1_000_000_000

    /// A runtime with an active channel set up at monotonic 0 and a lease of `leaseSeconds`.
    func activeRuntime(leaseSeconds: Double = 3, tuning: ChannelTuning = ChannelTuning()) throws -> PeerRuntime {
        let alice = X25519KeyPair.generate(), bob = X25519KeyPair.generate()
        let pairKey = SecretBytes.random(count: 32)
        let payload = { (index: UInt32) in HandshakePayload(sessionIndex: index, udpPort: 1, wallNanoseconds: 1, isRekey: false) }
        let (started, message1) = try ChannelHandshake.initiate(localStatic: alice, peerPublicKey: bob.publicKey,
                                                                  pairKey: pairKey, payload: payload(1))
        var responder = try ChannelHandshake.respond(localStatic: bob, message: message1)
        let (message2, _) = try responder.accept(pairKey: pairKey, payload: payload(2))
        var initiator = started
        let (_, keys) = try initiator.readResponse(message2)
        let record = PairedPeer(publicKey: bob.publicKey, name: "bob", pairKey: pairKey, addresses: [], pairedAt: 0)
        var runtime = PeerRuntime(record: record, tuning: tuning, leaseSeconds: leaseSeconds)
        runtime.channel = ActiveChannel(keys: keys, localIndex: 1, remoteIndex: 2, locallyInitiated: true, now: 0, tuning: tuning)
        runtime.lease.renew(now: 0)
        return runtime
    }

    @Test func keepalivesFollowTheirIntervalAndTheStreamJoinsNearTheLeaseEnd() throws {
        var runtime = try activeRuntime(leaseSeconds: 3)
        let interval = Self.second
        #expect(runtime.timerTick(now: 0, keepaliveInterval: interval) == [.keepaliveDatagram])
        #expect(runtime.timerTick(now: interval / 2, keepaliveInterval: interval) == [])
        #expect(runtime.timerTick(now: interval, keepaliveInterval: interval) == [.keepaliveDatagram])
        // 1.5 s left of the lease, less than two intervals: ask over the stream as well.
        #expect(runtime.timerTick(now: 3 * Self.second / 2 + interval, keepaliveInterval: interval)
                == [.keepaliveDatagram, .keepaliveStream])
        // A packet renews the lease: datagrams alone again.
        runtime.lease.renew(now: 3 * Self.second)
        #expect(runtime.timerTick(now: 4 * Self.second, keepaliveInterval: interval) == [.keepaliveDatagram])
    }

    @Test func anExpiredLeaseIsTheOnlyAction() throws {
        var runtime = try activeRuntime(leaseSeconds: 3)
        #expect(runtime.timerTick(now: 3 * Self.second, keepaliveInterval: Self.second) == [.leaseExpired])
    }

    @Test func withoutAChannelNothingIsDue() throws {
        var runtime = try activeRuntime()
        runtime.channel = nil
        #expect(runtime.timerTick(now: 0, keepaliveInterval: Self.second) == [])
    }

    @Test func keysAreRenewedThenRefusedOnTheirSchedule() throws {
        var tuning = ChannelTuning()
        tuning.rekeyAfter = 10
        tuning.rejectAfter = 20
        var runtime = try activeRuntime(leaseSeconds: 1_000, tuning: tuning)
        let interval = 1_000 * Self.second     // keepalives out of the way
        _ = runtime.timerTick(now: 0, keepaliveInterval: interval)
        #expect(runtime.timerTick(now: 9 * Self.second, keepaliveInterval: interval) == [])
        #expect(runtime.timerTick(now: 10 * Self.second, keepaliveInterval: interval) == [.startRekey])
        #expect(runtime.timerTick(now: 20 * Self.second, keepaliveInterval: interval) == [.keysExpired])
    }

    @Test func oneDialJobAtATimeWithBackoffBetweenFailedRounds() {
        var rng = Fixed()
        var dial = DialState(backoff: ReconnectBackoff(initialSeconds: 0.1, maximumSeconds: 8, jitter: 0))
        #expect(dial.schedule(immediately: true, channelActive: false, using: &rng) == 0)
        #expect(dial.schedule(immediately: true, channelActive: false, using: &rng) == nil)   // one is waiting
        #expect(dial.due(channelActive: false))
        let first = dial.startAttempt()
        #expect(dial.schedule(immediately: false, channelActive: false, using: &rng) == nil)  // one is running
        #expect(dial.attemptEnded(generation: first, failed: true))
        #expect(dial.schedule(immediately: false, channelActive: false, using: &rng) == 100_000_000)
        #expect(dial.due(channelActive: false))
        let second = dial.startAttempt()
        #expect(dial.attemptEnded(generation: second, failed: true))
        #expect(dial.schedule(immediately: false, channelActive: false, using: &rng) == 200_000_000)
        // An active channel needs no dial, and resets the backoff.
        #expect(!dial.due(channelActive: true))
        dial.activated()
        #expect(dial.schedule(immediately: false, channelActive: true, using: &rng) == nil)
        #expect(dial.schedule(immediately: false, channelActive: false, using: &rng) == 100_000_000)
    }

    @Test func anOlderAttemptCannotEndANewerOne() {
        var rng = Fixed()
        var dial = DialState(backoff: ReconnectBackoff(initialSeconds: 0.1, maximumSeconds: 8, jitter: 0))
        _ = dial.schedule(immediately: true, channelActive: false, using: &rng)
        _ = dial.due(channelActive: false)
        let old = dial.startAttempt()
        #expect(dial.attemptEnded(generation: old, failed: false) == false)
        #expect(dial.kick(channelActive: false) == .dialNow)
        #expect(dial.due(channelActive: false))
        let new = dial.startAttempt()
        #expect(dial.attemptEnded(generation: old, failed: true) == false)
        #expect(dial.attempting)
        #expect(dial.kick(channelActive: false) == .dialBesideAttempt)
        #expect(dial.attemptEnded(generation: new, failed: true))
        #expect(!dial.attempting)
        #expect(dial.kick(channelActive: true) == .none)
    }
}
