import Foundation
import MeshCrypto
import Testing
@testable import MeshDaemon

extension DeliveryRouter {
    /// Hands the router `upTos` as acks from `peer`, all within one turn of its executor (as a
    /// burst of ack messages read together would), as if those sequences had been sent (an ack
    /// above what was sent is refused).
    func receiveAckBurst(_ upTos: [UInt64], from peer: DeviceID) {
        if let highest = upTos.max(), (peerStates[peer]?.outbox.highestSent ?? 0) < highest { peerStates[peer]?.outbox.highestSent = highest }
        for upTo in upTos { sender.reliableAcked(self, upTo: upTo, from: peer) }
    }
}

extension DeliveryIntegration {
    @Suite("Deleting acknowledged outbox items", .serialized)
    struct DeliveryAckDeleteTests {
        /// Acks that arrive while a delete runs share the next store transaction: 30 acks in one
        /// burst cost two commits (the first ack's, then one up to the highest), and the outbox
        /// ends up empty either way.
        @Test func acksArrivingTogetherShareOneDeleteCommit() async throws {
            let bed = DeliveryTestBed()
            defer { Task { await bed.shutdown() } }
            let (a, b) = try await bed.pair()
            await b.stop()
            try await waitUntil("bob's channel down at alice", timeout: 10) {
                await a.node.activePeers().contains(b.deviceID) == false
            }
            for index in 1...30 {
                let (envelope, encoded) = try RouterFixtures.envelope("q\(index)", sequence: UInt64(index))
                #expect(try await a.router.send(envelope, encoded: encoded, mode: 2, to: b.id).outcome == "queued")
            }
            #expect(try await a.router.queue().count == 30)
            let before = await a.router.counterValues()["delivery.reliable.ack_commits"] ?? 0
            await a.router.receiveAckBurst(Array(1...30), from: b.deviceID)
            try await waitUntil("outbox empty", timeout: 5) { try await a.router.queue().isEmpty }
            try await waitUntil("deletes settled", timeout: 5) {
                await a.router.counterValues()["delivery.reliable.ack_commits"] ?? 0 >= before + 2
            }
            let counters = await a.router.counterValues()
            #expect((counters["delivery.reliable.ack_commits"] ?? 0) - before == 2)
            #expect(counters["delivery.reliable.acked"] == 30)
            #expect(try a.store.counts().outbox.items == 0)
            await bed.shutdown()
        }
    }
}
