import Testing
import MeshCore
import MeshCrypto
import NIOCore
import NIOEmbedded
@testable import MeshDaemon

/// The node's bookkeeping values, driven without a node: `ConnectionTable` (admission and the
/// pairing deadlines' inputs) and `PingProbes` (a reply before or after its prober waits).
@Suite("Node bookkeeping")
struct NodeBookkeepingTests {
    static let second: UInt64 = 1_000_000_000

    func table(perSource: Int = 2, total: Int = 4, burst: Double = 10) -> ConnectionTable {
        var tuning = ChannelTuning()
        tuning.maximumUnauthenticatedPerSource = perSource
        tuning.maximumUnauthenticatedConnections = total
        tuning.unauthenticatedSlotsReservedForPaired = 1
        tuning.handshakeBurstPerSource = burst
        tuning.handshakesPerSecondPerSource = 1
        return ConnectionTable(tuning: tuning)
    }

    func admittedID(_ admission: ConnectionTable.Admission) -> UInt64? {
        if case .admitted(let id, _) = admission { return id }
        return nil
    }

    @Test func aSourceGetsItsShareOfSlotsAndFreesThemWhenItsConnectionsEnd() {
        var table = table()
        func admit() -> ConnectionTable.Admission { table.admit(TCPStreamPath(EmbeddedChannel()), source: "10.0.0.1", known: false, now: 0) }
        let first = admittedID(admit())
        let second = admittedID(admit())
        #expect(first != nil && second != nil && first != second)
        guard case .refused(.sourceFull) = admit() else {
            Issue.record("a third connection from one source was admitted")
            return
        }
        #expect(table.open.count == 2 && table.unauthenticated.count == 2)
        if let first { table.authenticated(first) }
        #expect(table.unauthenticated.count == 1 && table.open.count == 2)
        let third = admittedID(admit())
        #expect(third != nil)
        if let second { table.ended(second) }
        #expect(table.open.count == 2)
    }

    @Test func aSourceFasterThanItsRateIsRefusedBeforeItTakesASlot() {
        var table = table(perSource: 8, total: 16, burst: 2)
        func admit(now: UInt64 = 0) -> ConnectionTable.Admission { table.admit(TCPStreamPath(EmbeddedChannel()), source: "10.0.0.9", known: false, now: now) }
        let burst = [admittedID(admit()), admittedID(admit())]
        #expect(burst.allSatisfy { $0 != nil })
        guard case .refused(.rateLimited) = admit() else {
            Issue.record("a connection beyond the burst was not rate limited")
            return
        }
        #expect(table.unauthenticated.count == 2)
        let refilled = admittedID(admit(now: Self.second))
        #expect(refilled != nil)
    }

    @Test func outgoingConnectionsTakeNoSlot() {
        var table = table()
        let id = table.register(TCPStreamPath(EmbeddedChannel()))
        #expect(table.open[id] != nil && table.unauthenticated.count == 0)
        let engaged = table.engage(id)
        #expect(!engaged)
    }

    @Test func thePairingDeadlineIsArmedFromTheSecondMessageWithinTheAttempt() {
        var table = table()
        guard let id = admittedID(table.admit(TCPStreamPath(EmbeddedChannel()), source: "10.0.0.1", known: false, now: 0)) else {
            Issue.record("not admitted")
            return
        }
        func arrived() -> Bool { table.pairingMessageArrived(id) }
        table.pairingAttemptBegan(id, now: 0, duration: 10 * Self.second)
        // The hello: still under the first-message deadline armed at accept.
        #expect(!arrived())
        #expect(arrived())
        #expect(table.unauthenticated.isEngaged(id))
        #expect(arrived())
        #expect(table.pairingAttemptLeft(id, now: 4 * Self.second) == 6 * Self.second)
        #expect(table.pairingAttemptLeft(id, now: 11 * Self.second) == 0)
        table.pairingAttemptBegan(id, now: .max - 1, duration: 10 * Self.second)     // never wraps
        #expect(table.pairingAttemptLeft(id, now: .max - 1) == 1)
        table.ended(id)
        #expect(table.pairingAttemptLeft(id, now: 0) == 0 && table.open[id] == nil)
    }

    @Test func aReplyBeforeTheProberWaitsIsKeptAndATimeoutAfterItIsNot() async {
        let peer = DeviceID(publicKey: X25519KeyPair.generate().publicKey)
        let other = DeviceID(publicKey: X25519KeyPair.generate().publicKey)
        var probes = PingProbes()
        func finish(_ id: UInt32, at: UInt64?, from: DeviceID?) -> Bool { probes.finish(id, at: at, from: from) != nil }
        let early = probes.start(peer: peer)
        #expect(!finish(early, at: 42, from: other))   // another peer's reply is ignored
        #expect(!finish(early, at: 42, from: peer))    // nobody waits yet: kept
        let got: UInt64? = await withCheckedContinuation { continuation in
            if let result = probes.wait(early, continuation: continuation) { continuation.resume(returning: result) }
        }
        #expect(got == 42)
        #expect(probes.ids(of: nil).isEmpty)

        let late = probes.start(peer: peer)
        #expect(probes.ids(of: peer) == [late] && probes.ids(of: other).isEmpty)
        #expect(!finish(late, at: nil, from: nil))     // timed out before anyone waited
        let none: UInt64? = await withCheckedContinuation { continuation in
            if let result = probes.wait(late, continuation: continuation) { continuation.resume(returning: result) }
        }
        #expect(none == nil)
    }
}
