#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MeshLocalAPI
import SessionMeshClient
import Testing
@testable import MeshDaemon

/// Per-uid limits of the local API: connections, and body bytes of running requests.
@Suite("local API per-uid limits")
struct LocalAPIUIDLimitsTests {
    /// A uid at its connection limit gets `too-many-connections` naming it; a closed connection
    /// frees its place.
    @Test func aUIDAtItsConnectionLimitIsRefusedUntilOneCloses() async throws {
        var limits = LocalAPIServer.Limits()
        limits.maximumConnectionsPerUID = 2
        try await withTestServer(limits: limits) { test in
            let first = try await MeshClient.connect(socketPath: test.socketPath)
            let second = try await MeshClient.connect(socketPath: test.socketPath)
            #expect(try await first.status().name == "fake")
            #expect(try await second.status().name == "fake")
            let third = try await MeshClient.connect(socketPath: test.socketPath)
            await #expect {
                _ = try await third.status()
            } throws: { error in
                guard let error = error as? MeshClientError else { return false }
                return error.code == "too-many-connections"
                    && error.message == "uid \(geteuid()) already has 2 local connections open to meshd; close some and retry"
            }
            await third.close()
            #expect(test.server.counters.snapshot()["api.connections.refused_per_uid"] == 1)
            await first.close()
            try await pollUntil { test.server.connectionCount == 1 }
            let again = try await MeshClient.connect(socketPath: test.socketPath)
            #expect(try await again.status().name == "fake")
            await again.close()
            await second.close()
        }
    }

    @Test func theBudgetLetsAUIDWithNothingRunningStartAnySizeAndCapsTheRest() {
        let budget = LocalAPIUIDBudget(limits: .init(maximumConnections: 4, maximumInFlightBytes: 100))
        #expect(budget.reserve(uid: 7, bytes: 500), "nothing of uid 7 runs: even a large request starts")
        #expect(!budget.reserve(uid: 7, bytes: 1))
        #expect(budget.reserve(uid: 8, bytes: 60), "another uid has its own budget")
        #expect(budget.reserve(uid: 8, bytes: 40))
        #expect(!budget.reserve(uid: 8, bytes: 1))
        let woken = WakeCount()
        budget.waitForRoom(uid: 8, waiter: ObjectIdentifier(woken)) { woken.add() }
        #expect(woken.value == 0)
        budget.release(uid: 7, bytes: 500)
        #expect(woken.value == 0, "bytes of another uid wake nobody here")
        budget.release(uid: 8, bytes: 40)
        #expect(woken.value == 1)
        #expect(budget.inFlightBytes(uid: 8) == 60)
        budget.release(uid: 8, bytes: 60)
        #expect(woken.value == 1, "a waiter is woken once")
        #expect(budget.inFlightBytes(uid: 8) == 0)

        #expect(budget.openConnection(uid: 7) && budget.openConnection(uid: 7))
        #expect(budget.openConnection(uid: 7) && budget.openConnection(uid: 7))
        #expect(!budget.openConnection(uid: 7))
        #expect(budget.openConnection(uid: 8))
        budget.closeConnection(uid: 7)
        #expect(budget.openConnection(uid: 7))
    }

    /// The flow control asks the shared budget before a request starts; a refusal queues the
    /// request, pauses reading and waits for `roomFreed`.
    @Test func aRequestTheSharedBudgetRefusesWaitsAndReadingPauses() {
        var flow = LocalAPIFlowControl(maximumInFlight: 8, maximumQueued: 16, maximumInFlightBytes: 1000)
        var room = false
        #expect(flow.requestArrived(bytes: 10, admit: { _ in room }) == .queue)
        #expect(flow.waitingForRoom)
        #expect(flow.isPaused)
        #expect(flow.readRequested() == .hold(newlyPaused: true))
        #expect(flow.requestArrived(bytes: 10, admit: { _ in true }) == .queue, "order kept behind the waiting one")
        room = true
        let progress = flow.roomFreed(admit: { _ in room })
        #expect(progress.startQueued == 2)
        #expect(progress.resumeReading)
        #expect(!flow.waitingForRoom)
        #expect(flow.inFlight == 2 && flow.inFlightBytes == 20)
    }

    final class WakeCount: @unchecked Sendable {
        private let lock = NSLock()
        private var count = 0
        func add() { lock.lock(); count += 1; lock.unlock() }
        var value: Int { lock.lock(); defer { lock.unlock() }; return count }
    }
}
