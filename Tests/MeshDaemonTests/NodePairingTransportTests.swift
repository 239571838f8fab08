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

    @Test func wrongCodesFromOneAddressCannotBurnTheCodeAndAnotherAddressStillPairs() async throws {
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
        // Bob's address had its two guesses: even the right code is refused from it now.
        do {
            _ = try await bob.node.joinPairing(code: invitation.code, address: alice.address)
            Issue.record("a third attempt from one address must be refused")
        } catch let error as MeshError {
            #expect(error.code == "pairing-refused")
        }
        let counters = await alice.node.status().counters
        #expect(counters["pairing.attempts_failed"] == 2)
        #expect(counters["pairing.attempts_refused"] == 2)
        // The code is still live: a device at another address pairs with it.
        let code = try PairingCode.parse(invitation.code)
        var joiner = try PairingJoiner(code: code, identity: PairingFixture.identity("carol"))
        let hello = try joiner.start()
        let port = alice.port
        let connection = try #require(await offPool { RawPairingConnection(port: port, from: "127.0.0.3") })
        let m2 = try #require(await offPool { () -> [UInt8]? in
            connection.write(RawPairingConnection.preamble)
            connection.writeFrame(hello)
            return connection.readFrame()
        })
        guard case .send(let m3) = try joiner.receive(m2) else { Issue.record("no message 3"); return }
        let m4 = try #require(await offPool { () -> [UInt8]? in
            connection.writeFrame(m3)
            return connection.readFrame()
        })
        guard case .finished = try joiner.receive(m4) else { Issue.record("carol did not pair"); return }
        let paired = try await waiter.value
        #expect(paired.name == "carol")
        #expect(await bob.node.peers().isEmpty)
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
