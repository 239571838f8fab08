import Foundation
import MeshCore
import MeshCrypto
import Testing
@testable import MeshDaemon

/// A reliable send to several targets waiting for each commit, and how it fails. No actor or store.
struct ReliableSendWaitTests {
    static func peer(_ byte: UInt8) -> DeviceID { DeviceID(publicKey: Array(repeating: byte, count: 32)) }
    static func receipt(_ sequence: UInt64) -> OutboxReceipt {
        OutboxReceipt(id: OutboxID(rawValue: Int64(sequence)), sequence: sequence, wasAlreadyQueued: false)
    }
    static func error(_ code: StoreError.Code) -> StoreError {
        StoreError(code: code, operation: "enqueue outbox item", path: "/tmp/x", detail: "test")
    }

    @Test func itFinishesOnceEveryTargetIsInWhateverTheOrder() {
        let peers = [Self.peer(1), Self.peer(2), Self.peer(3)]
        let wait = ReliableSendWait(peers: peers) { _ in }
        #expect(!wait.record(.success(Self.receipt(7)), at: 2))
        #expect(!wait.record(.success(Self.receipt(9)), at: 2), "a second result for a target is ignored")
        #expect(!wait.record(.failure(Self.error(.full)), at: 0))
        #expect(wait.record(.success(Self.receipt(5)), at: 1))
        var committed: [(DeviceID, UInt64)] = []
        wait.forEachCommitted { committed.append(($0, $1.sequence)) }
        #expect(committed.map(\.0) == [peers[1], peers[2]] && committed.map(\.1) == [5, 7],
                "committed targets in target order: their pumps start although another target failed")
        #expect(wait.failure == Self.error(.full))
    }

    @Test func theFirstFailureInTargetOrderIsReported() {
        let wait = ReliableSendWait(peers: [Self.peer(1), Self.peer(2)]) { _ in }
        _ = wait.record(.failure(Self.error(.io)), at: 1)
        _ = wait.record(.failure(Self.error(.full)), at: 0)
        #expect(wait.failure?.code == .full)
        let fine = ReliableSendWait(peers: [Self.peer(1)]) { _ in }
        #expect(fine.record(.success(Self.receipt(1)), at: 0) && fine.failure == nil)
    }

    @Test func aFullQueueIsRefusedAndAnythingElseIsAStoreFailure() {
        let full = ReliableSendWait.failure(for: Self.error(.full))
        #expect(full.refused && full.error.kind == .queueFull)
        let io = ReliableSendWait.failure(for: Self.error(.io))
        #expect(!io.refused && io.error.kind == .storeFailed)
        let other = ReliableSendWait.failure(for: CancellationError())
        #expect(!other.refused && other.error.kind == .storeFailed)
    }
}
