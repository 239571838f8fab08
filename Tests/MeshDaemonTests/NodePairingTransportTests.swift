import Foundation
import MeshCrypto
import MeshLocalAPI
import Testing
@testable import MeshDaemon

@Suite("Pairing transport between nodes", .serialized)
struct NodePairingTransportTests {
    @Test func pairByCodeStoresBothSidesAndActivatesTheChannel() async throws {
        let bed = NodeTestBed()
        defer { Task { await bed.shutdown() } }
        let alice = try await bed.start(name: "alice")
        let bob = try await bed.start(name: "bob")
        let started = ContinuousClock.now
        let (invited, joined) = try await bed.pair(alice, bob)
        #expect(invited.deviceID == bob.node.deviceID.description)
        #expect(joined.deviceID == alice.node.deviceID.description)
        #expect(invited.name == "bob" && joined.name == "alice")
        #expect(invited.verification == joined.verification && !invited.verification.isEmpty)
        try await waitUntil("both channels active", timeout: 2) {
            await bothActive(alice, bob)
        }
        print("pairing + channel active after \(ContinuousClock.now - started)")
        let bobAsSeenByAlice = try #require(await alice.node.peers().first)
        #expect(bobAsSeenByAlice.name == "bob")
        #expect(bobAsSeenByAlice.addresses.contains { $0.source == .observed && $0.address == bob.address })
        let aliceAsSeenByBob = try #require(await bob.node.peers().first)
        #expect(aliceAsSeenByBob.addresses.contains { $0.source == .pairing && $0.address == alice.address })
        await bed.shutdown()
    }

    @Test func wrongCodeFailsAndTheFourthAttemptIsRefused() async throws {
        let bed = NodeTestBed()
        defer { Task { await bed.shutdown() } }
        let alice = try await bed.start(name: "alice")
        let bob = try await bed.start(name: "bob")
        let invitation = try await alice.node.createPairingCode(validFor: 60)
        let waiter = Task { try await alice.node.awaitPairing(code: invitation.code) }
        var wrong = PairingCode.generate()
        while wrong.description == invitation.code { wrong = PairingCode.generate() }
        for attempt in 1...3 {
            await #expect(throws: MeshError.self, "attempt \(attempt)") {
                _ = try await bob.node.joinPairing(code: wrong.description, address: alice.address)
            }
        }
        // The waiter learns the code is dead.
        let waited = await waiter.result
        #expect(throws: MeshError.pairingCodeInvalidated) { try waited.get() }
        // A fourth attempt, even with the right code, is refused.
        do {
            _ = try await bob.node.joinPairing(code: invitation.code, address: alice.address)
            Issue.record("a fourth attempt must be refused")
        } catch let error as MeshError {
            #expect(error.code == "pairing-refused")
        }
        let alicePeers = await alice.node.peers(), bobPeers = await bob.node.peers()
        #expect(alicePeers.isEmpty && bobPeers.isEmpty)
        let counters = await alice.node.status().counters
        #expect(counters["pairing.attempts_failed"] == 3)
        #expect(counters["pairing.attempts_refused"] == 1)
        await bed.shutdown()
    }

    @Test func aMistypedCodeFailsBeforeAnyNetworkTraffic() async throws {
        let bed = NodeTestBed()
        defer { Task { await bed.shutdown() } }
        let bob = try await bed.start(name: "bob")
        do {
            _ = try await bob.node.joinPairing(code: "ZZZZ", address: "127.0.0.1:9")
            Issue.record("expected invalid-code")
        } catch let error as MeshError {
            #expect(error.code == "invalid-code")
        }
        await bed.shutdown()
    }

    @Test func anExpiredCodeFailsItsWaiter() async throws {
        let bed = NodeTestBed()
        defer { Task { await bed.shutdown() } }
        let alice = try await bed.start(name: "alice")
        let invitation = try await alice.node.createPairingCode(validFor: 1)
        await #expect(throws: MeshError.pairingExpired) {
            _ = try await alice.node.awaitPairing(code: invitation.code)
        }
        await bed.shutdown()
    }
}
