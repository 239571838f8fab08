import Foundation
import SessionMesh
import Testing
@testable import MeshDaemon

extension DeliveryRouter {
    /// Test hook: several realtime sends in one job on the router's loop (one loop turn, as a
    /// local API read burst produces them).
    func sendImmediatelyInOneTurn(_ sends: [(AnySessionSyncEnvelope, [UInt8])]) -> [String] {
        sends.map { sendImmediately($0.0.metadata, encoded: $0.1, mode: 1, to: nil)?.outcome ?? "none" }
    }
}

/// A sink that records its calls in order: an `e` per emitted envelope, an `f` per `flushNow`.
final class FlushRecordingSink: DeliveryEventSink, @unchecked Sendable {
    private let lock = NSLock()
    private var record: [Character] = []
    func emit(_ event: DeliveryEvent) {
        if case .envelope = event { lock.withLock { record.append("e") } }
    }
    func flushNow() { lock.withLock { record.append("f") } }
    var calls: String { lock.withLock { String(record) } }
}

extension DeliveryIntegration {
    @Suite("Delivery realtime batches between two daemons", .serialized)
    struct DeliveryRealtimeBatchTests {
        @Test func aBurstArrivesInOrderOnceEachInFewerDatagrams() async throws {
            let bed = DeliveryTestBed()
            defer { Task { await bed.shutdown() } }
            let (a, b, _, sinkB) = try await bed.pairWithApps()
            let count = 40
            let sends = try (1...count).map { try RouterFixtures.envelope("b\($0)", sequence: UInt64($0)) }
            let outcomes = await a.router.sendImmediatelyInOneTurn(sends)
            #expect(outcomes == Array(repeating: "sent", count: count))
            try await waitUntil("\(count) realtime items", timeout: 5) { sinkB.envelopes.count >= count }
            let counters = try await bed.realtimeSettled(a, count: count)
            let datagrams = counters["delivery.realtime.datagrams"] ?? 0
            print("realtime burst of \(count): \(datagrams) datagrams, \(counters["delivery.realtime.batches"] ?? 0) batches, "
                  + "\(counters["delivery.realtime.fallbacks"] ?? 0) fell back")
            #expect(sinkB.envelopes.map { RouterFixtures.text($0.envelope) } == (1...count).map { "b\($0)" })
            #expect(sinkB.envelopes.allSatisfy { $0.mode == 1 && $0.inboxID == 0 })
            #expect(datagrams < UInt64(count) && datagrams >= 1)
            #expect((counters["delivery.realtime.batches"] ?? 0) >= 1)
            let received = await b.router.counterValues()
            #expect(received["delivery.realtime.received"] == UInt64(count))
            // Acks of items read in one loop turn share datagrams too (≤ 64 event IDs each).
            let ackDatagrams = received["delivery.realtime.ack_datagrams"] ?? 0
            #expect(ackDatagrams >= 1 && ackDatagrams < UInt64(count))
            #expect(received["delivery.malformed"] ?? 0 == 0)
            await bed.shutdown()
        }

        /// The events a burst of received datagrams produced are flushed to their sinks when
        /// the burst has been handled, not left for the end of the loop turn: every envelope
        /// is followed by a flush, and bursts share one.
        @Test func theEventsOfADatagramBurstAreFlushedWhenItEnds() async throws {
            let bed = DeliveryTestBed()
            defer { Task { await bed.shutdown() } }
            let (a, b, _, _) = try await bed.pairWithApps()
            let recorder = FlushRecordingSink()
            _ = await b.router.attach(features: ["demo"], sink: recorder)
            // Events for a sink whose attach replay still runs are held and handed after it, not
            // live: wait until the (empty) replay is over.
            try await waitUntil("the recorder's attach replay", timeout: 5) { await b.router.noReplayRuns() }
            let count = 40
            let sends = try (1...count).map { try RouterFixtures.envelope("f\($0)", sequence: UInt64($0)) }
            #expect(await a.router.sendImmediatelyInOneTurn(sends) == Array(repeating: "sent", count: count))
            try await waitUntil("\(count) envelopes and their flush", timeout: 5) {
                let calls = recorder.calls
                return calls.filter { $0 == "e" }.count >= count && calls.last == "f"
            }
            let calls = recorder.calls
            let flushes = calls.filter { $0 == "f" }.count
            let datagrams = try await bed.realtimeSettled(a, count: count)["delivery.realtime.datagrams"] ?? 0
            print("burst of \(count) realtime items in \(datagrams) datagrams: sink calls \(calls)")
            #expect(flushes >= 1 && UInt64(flushes) <= datagrams, "one flush per socket read at most")
            await bed.shutdown()
        }
    }
}
