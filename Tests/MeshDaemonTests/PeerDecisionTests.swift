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
        func tick(_ now: UInt64) -> [PeerTimerAction] { runtime.timerTick(now: now, keepaliveInterval: interval) }
        #expect(tick(0) == [.keepaliveDatagram])
        #expect(tick(interval / 2) == [])
        #expect(tick(interval) == [.keepaliveDatagram])
        // 1.5 s left of the lease, less than two intervals: ask over the stream as well.
        #expect(tick(3 * Self.second / 2 + interval) == [.keepaliveDatagram, .keepaliveStream])
        // A packet renews the lease: datagrams alone again.
        runtime.lease.renew(now: 3 * Self.second)
        #expect(tick(4 * Self.second) == [.keepaliveDatagram])
    }

    @Test func anExpiredLeaseIsTheOnlyAction() throws {
        var runtime = try activeRuntime(leaseSeconds: 3)
        let actions = runtime.timerTick(now: 3 * Self.second, keepaliveInterval: Self.second)
        #expect(actions == [.leaseExpired])
    }

    @Test func withoutAChannelNothingIsDue() throws {
        var runtime = try activeRuntime()
        runtime.channel = nil
        let actions = runtime.timerTick(now: 0, keepaliveInterval: Self.second)
        #expect(actions == [])
    }

    @Test func keysAreRenewedThenRefusedOnTheirSchedule() throws {
        var tuning = ChannelTuning()
        tuning.rekeyAfter = 10
        tuning.rejectAfter = 20
        var runtime = try activeRuntime(leaseSeconds: 1_000, tuning: tuning)
        let interval = 1_000 * Self.second     // keepalives out of the way
        func tick(_ now: UInt64) -> [PeerTimerAction] { runtime.timerTick(now: now, keepaliveInterval: interval) }
        _ = tick(0)
        #expect(tick(9 * Self.second) == [])
        #expect(tick(10 * Self.second) == [.startRekey])
        #expect(tick(20 * Self.second) == [.keysExpired])
    }

    @Test func oneDialJobAtATimeWithBackoffBetweenFailedRounds() {
        var rng = Fixed()
        var dial = DialState(backoff: ReconnectBackoff(initialSeconds: 0.1, maximumSeconds: 8, jitter: 0))
        func schedule(immediately: Bool, active: Bool = false) -> UInt64? {
            dial.schedule(immediately: immediately, channelActive: active, using: &rng)
        }
        func due(active: Bool = false) -> Bool { dial.due(channelActive: active) }
        func ended(_ generation: UInt64) -> Bool { dial.attemptEnded(generation: generation, failed: true) }
        #expect(schedule(immediately: true) == 0)
        #expect(schedule(immediately: true) == nil)     // one is waiting
        #expect(due())
        let first = dial.startAttempt()
        #expect(schedule(immediately: false) == nil)    // one is running
        #expect(ended(first))
        #expect(schedule(immediately: false) == 100_000_000)
        #expect(due())
        let second = dial.startAttempt()
        #expect(ended(second))
        #expect(schedule(immediately: false) == 200_000_000)
        // An active channel needs no dial, and resets the backoff.
        #expect(!due(active: true))
        dial.activated()
        #expect(schedule(immediately: false, active: true) == nil)
        #expect(schedule(immediately: false) == 100_000_000)
    }

    @Test func anOlderAttemptCannotEndANewerOne() {
        var rng = Fixed()
        var dial = DialState(backoff: ReconnectBackoff(initialSeconds: 0.1, maximumSeconds: 8, jitter: 0))
        func ended(_ generation: UInt64, failed: Bool) -> Bool { dial.attemptEnded(generation: generation, failed: failed) }
        func kick(active: Bool = false) -> DialState.Kick { dial.kick(channelActive: active) }
        func due() -> Bool { dial.due(channelActive: false) }
        _ = dial.schedule(immediately: true, channelActive: false, using: &rng)
        _ = due()
        let old = dial.startAttempt()
        #expect(!ended(old, failed: false))
        #expect(kick() == .dialNow)
        #expect(due())
        let new = dial.startAttempt()
        #expect(!ended(old, failed: true))
        #expect(dial.attempting)
        #expect(kick() == .dialBesideAttempt)
        #expect(ended(new, failed: true))
        #expect(!dial.attempting)
        #expect(kick(active: true) == .none)
    }
}
