import Foundation
import MeshLocalAPI
import Testing
@testable import MeshDaemon

/// `pair.wait` requests whose client left leave nothing behind in the node.
@Suite("Pairing waiters")
struct NodePairingWaiterTests {
    @Test func aWaiterWhoseRequestIsCancelledIsRemovedAndEndsAtOnce() async throws {
        let bed = NodeTestBed()
        defer { Task { await bed.shutdown() } }
        let inviter = try await bed.start(name: "inviter")
        let code = try await inviter.node.createPairingCode(validFor: 300).code
        var waits: [Task<PairedDevice, any Error>] = []
        for _ in 0..<50 {
            waits.append(Task { try await inviter.node.awaitPairing(code: code) })
        }
        try await waitUntil("50 waiters registered", timeout: 10) { await inviter.node.pairingWaiterCount == 50 }
        for wait in waits { wait.cancel() }
        for wait in waits {
            await #expect(throws: CancellationError.self) { try await wait.value }
        }
        #expect(await inviter.node.pairingWaiterCount == 0)
        // The code is still live for a waiter that stays.
        let staying = Task { try await inviter.node.awaitPairing(code: code) }
        try await waitUntil("a new waiter", timeout: 10) { await inviter.node.pairingWaiterCount == 1 }
        await inviter.node.cancelPairing(code: code)
        await #expect(throws: MeshError.self) { try await staying.value }
        await bed.shutdown()
    }
}
