import Foundation
import MeshCore
import Testing
@testable import MeshDaemon

/// The outbound budget of a channel connection: replies dropped over the reply limit, own
/// traffic refused at the hard limit, the stall clock, and when memory is worth giving back.
@Suite("Outbound budget")
struct OutboundBudgetTests {
    static let second: UInt64 = 1_000_000_000

    /// A budget of 10 000 / 40 000 bytes (charged), stalled after 2 s.
    static func budget() -> OutboundBudget {
        OutboundBudget(replyLimit: 10_000, limit: 40_000, stallNanoseconds: 2 * second)
    }

    @Test func repliesAreDroppedOverTheReplyLimitAndOwnTrafficOnlyAtTheHardLimit() {
        var budget = Self.budget()
        var writes: [Int] = []
        // A peer that never reads: every admitted reply stays queued.
        var dropped = 0
        for _ in 0..<10_000 {
            guard budget.admit(.reply) == .write else {
                dropped += 1
                continue
            }
            budget.queued(bytes: 40, now: 0)
            writes.append(40)
        }
        // Each 40-byte reply is charged 296 bytes: 34 fit under 10 000, the 35th goes over.
        #expect(writes.count == 34)
        #expect(dropped == 10_000 - 34)
        #expect(budget.charge == 34 * (40 + OutboundBudget.perWriteCharge))
        #expect(budget.charge <= 10_000 + 40 + OutboundBudget.perWriteCharge)
        // Own traffic still goes until the hard limit, then is refused.
        #expect(budget.admit(.own) == .write)
        budget.queued(bytes: 30_000, now: 0)
        #expect(budget.admit(.own) == .refuse)
        #expect(budget.admit(.reply) == .drop)
        // Once NIO hands the bytes to the kernel, replies go again.
        budget.written(bytes: 30_000)
        for bytes in writes { budget.written(bytes: bytes) }
        #expect(budget.charge == 0)
        #expect(budget.admit(.reply) == .write)
        #expect(budget.peakCharge >= 30_000)
    }

    @Test func theStallClockRunsOnlyWhileOverTheReplyLimit() {
        var budget = Self.budget()
        budget.queued(bytes: 9_000, now: 0)
        #expect(budget.overSince == nil)
        #expect(!budget.stalled(now: 10 * Self.second))
        budget.queued(bytes: 9_000, now: 1 * Self.second)
        #expect(budget.overSince == 1 * Self.second)
        #expect(!budget.stalled(now: 3 * Self.second))
        #expect(budget.stalled(now: 3 * Self.second + 1))
        #expect(budget.secondsOver(now: 3 * Self.second) == 2)
        // Draining below the limit resets it: a peer that reads, slowly, is not closed.
        budget.written(bytes: 9_000)
        #expect(budget.overSince == nil)
        #expect(!budget.stalled(now: 100 * Self.second))
        budget.queued(bytes: 9_000, now: 50 * Self.second)
        #expect(!budget.stalled(now: 51 * Self.second))
        #expect(budget.stalled(now: 53 * Self.second))
    }

    @Test func memoryIsWorthGivingBackOnceAfterAnOverloadDrainsOrCloses() {
        let peer = DeviceID(publicKey: Array(repeating: 7, count: 32))
        var queues = OutboundQueues(replyLimit: 10_000, limit: 40_000, stallSeconds: 2)
        func release() -> Bool { queues.takeRelease() }
        queues.open(1)
        // Ordinary traffic that never goes over: nothing to give back.
        queues.queued(bytes: 500, on: 1, now: 0)
        queues.written(bytes: 500, on: 1)
        #expect(!release())
        // An overload that drains: once.
        for _ in 0..<40 { queues.queued(bytes: 400, on: 1, now: 0) }
        #expect(queues.stalled(now: 3 * Self.second).map(\.connection) == [1])
        for _ in 0..<40 { queues.written(bytes: 400, on: 1) }
        #expect(release())
        #expect(!release())
        #expect(queues.stalled(now: 10 * Self.second).isEmpty)
        // An overload whose channel closes: once, and the reason is kept for `meshctl peers`.
        for _ in 0..<40 { queues.queued(bytes: 400, on: 1, now: 0) }
        queues.close(1, peer: peer, reason: MeshNode.outboundStalledReason(seconds: 5), at: 1_700_000_000)
        #expect(release())
        #expect(queues.totalCharge == 0)
        #expect(queues.lastClosing[peer] == OutboundQueues.Closing(reason: "the peer did not read for 5 s", at: 1_700_000_000))
        // Completions of writes on the closed connection are ignored.
        queues.written(bytes: 400, on: 1)
        #expect(!release())
        #expect(queues.peakCharge >= 10_000)
        queues.forget(peer)
        #expect(queues.lastClosing[peer] == nil)
    }
}
