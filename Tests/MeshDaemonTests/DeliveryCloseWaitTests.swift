import Foundation
import Testing
@testable import MeshDaemon

/// `session.close` waits for the active peers' acks of its closing item all at once: peers
/// that never acknowledge cost one `closeWait` in all, not one each.
extension DeliveryIntegration {
    @Suite("session.close waits for its peers at once", .serialized)
    struct CloseWaitTests {
        @Test func peersThatNeverAcknowledgeCostOneCloseWaitInAll() async throws {
            let bed = DeliveryTestBed()
            let owner = try await bed.start(name: "owner")
            do {
                // Peers with a channel and no delivery router: they receive the closing item
                // and never acknowledge it.
                let silent = [try await bed.nodes.start(name: "silent-1"), try await bed.nodes.start(name: "silent-2"),
                              try await bed.nodes.start(name: "silent-3")]
                for peer in silent { _ = try await bed.nodes.pair(owner.running, peer) }
                let ids = silent.map(\.node.deviceID)
                try await waitUntil("channels to the three peers active", timeout: 15) {
                    let active = await owner.node.activePeers()
                    return ids.allSatisfy(active.contains)
                }
                try await waitUntil("the router sees the three peers active", timeout: 15) {
                    await ids.asyncAllSatisfy { await owner.router.peerStates[$0]?.active == true }
                }
                let session = UUID()
                try await owner.router.announceSession(sessionID: session, featureID: "demo", owner: owner.id, status: "open")
                let clock = ContinuousClock(), started = clock.now
                let closed = try await owner.router.closeSession(sessionID: session, featureID: "demo")
                let took = clock.now - started
                print("session.close with 3 peers that never acknowledge: \(took.formatted(.units(allowed: [.milliseconds]))) (closeWait 2 s)")
                #expect(closed.delivered.isEmpty)
                #expect(Set(closed.queued) == Set(ids.map(\.description)))
                #expect(took >= .seconds(1.9), "it waited for the acks")
                #expect(took < .seconds(3.5), "three peers that never acknowledge cost one closeWait, not three")
                // The closing item stays queued for each of them.
                let queued = try await owner.router.queue().map(\.summary)
                #expect(Set(queued.filter { $0.sessionID == session }.map(\.peer)) == Set(ids.map(\.description)))
            } catch {
                await bed.shutdown()
                throw error
            }
            await bed.shutdown()
        }
    }
}

extension Sequence where Element: Sendable {
    fileprivate func asyncAllSatisfy(_ predicate: (Element) async -> Bool) async -> Bool {
        for element in self where !(await predicate(element)) { return false }
        return true
    }
}
