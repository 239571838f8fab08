#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MeshLocalAPI
import NIOCore
import SessionMesh

/// Throughput with lean apps: plain blocking Unix sockets on both sides (no NIO, no Swift
/// concurrency), so the figure is what the daemons manage when the apps cost little. Realtime by
/// default; with `.reliableEventually` every item is durable at both ends and acked by B's app.
///
/// Three threads: one writes `send` frames to A, `batch` frames per `write(2)`, starting a
/// batch only while fewer than `lead` messages are on their way to B's app; one reads (and
/// discards after checking) A's replies; one reads B's envelope events, counts distinct
/// sequences and acks the inbox items (realtime items that came by the durable fallback).
/// The frames are encoded before the clock starts, as an app would have its data at hand.
struct BlockingThroughputProbe {
    /// The figures the MeshClient phases report, and the send replies that were not `sent`.
    struct Result {
        var throughput: DeliveryBenchRun.Throughput
        var notSent: Int
    }

    /// What the receiving thread saw (shared under `lock`).
    private final class Progress: @unchecked Sendable {
        let lock = NSLock()
        var arrived: ArrivalSet
        var live = 0
        var fallback = 0
        var duplicates = 0
        var redelivered = 0
        var lastArrival: UInt64 = 0
        var notSent = 0
        var failure: String?

        init(count: Int) { arrived = ArrivalSet(count: count) }
    }

    /// `feature`: the receiving app's feature; a run that reuses a pair of daemons takes a new
    /// one, so no item of an earlier run is offered to it again.
    static func run(sender: String, receiver: String, count: Int, payloadBytes: Int,
                    batch: Int, lead: Int, mode: SessionDeliveryMode = .realtimeBestEffort,
                    feature: String = "bench-lean-rate") throws -> Result {
        let a = try BlockingSocket(path: sender)
        defer { a.close() }
        let b = try BlockingSocket(path: receiver)
        defer { b.close() }
        try LeanAppPair.attach(b, app: feature, feature: feature, reachableFrom: a)

        // Every frame encoded up front, `batch` per buffer.
        let session = UUID(), prefix = UInt64.random(in: .min ... .max)
        var buffers: [[UInt8]] = []
        var buffer = ByteBuffer()
        for index in 0..<count {
            var payload = Data(count: max(8, payloadBytes))
            // index + 1: the reachability probes that went before carry 0 (all-zero payloads).
            for byte in 0..<8 { payload[byte] = UInt8(truncatingIfNeeded: UInt64(index + 1) >> (56 - 8 * byte)) }
            let eventID = UUID(uuid: withUnsafeBytes(of: (prefix, UInt64(index).bigEndian)) { $0.load(as: uuid_t.self) })
            let envelope = AnySessionSyncEnvelope(
                metadata: SessionSyncMetadata(sessionID: session, featureID: feature, sourcePeerID: "bench-lean", eventID: eventID,
                                              sequence: UInt64(index + 1), causalTimestamp: Date(), payloadType: "bench"),
                payload: payload)
            LocalAPIFrameEncoder.write(LocalAPIFrame(kind: .request, operation: .send, flags: .binaryBody, requestID: UInt32(index + 1),
                                                     body: try MeshSendRequest(mode: mode, envelope: envelope).encode()),
                                       to: &buffer)
            if (index + 1) % batch == 0 || index == count - 1 {
                buffers.append(Array(buffer.readableBytesView))
                buffer.clear()
            }
        }

        let progress = Progress(count: count)
        let done = DispatchGroup()
        let start = DispatchTime.now().uptimeNanoseconds
        let deadline = start + 60_000_000_000
        run(on: done) { receive(b, progress: progress, count: count, deadline: deadline) }
        let expected: MeshSendReply.Outcome = mode == .realtimeBestEffort ? .sent : .queued
        run(on: done) { readReplies(a, progress: progress, count: count, expected: expected, deadline: deadline) }
        var written = 0
        for bytes in buffers {
            // Flow control of the app: at most `lead` messages on their way to B's app.
            while written - progress.lock.withLock({ progress.arrived.distinct }) > lead, DispatchTime.now().uptimeNanoseconds < deadline {
                usleep(100)
            }
            try a.writeRaw(bytes)
            written += bytes.isEmpty ? 0 : batch
        }
        done.wait()
        return progress.lock.withLock {
            if let failure = progress.failure { print("  lean rate probe: \(failure)") }
            let seconds = Double(max(progress.lastArrival, start) - start) / 1e9
            return Result(throughput: DeliveryBenchRun.Throughput(
                sent: count, live: progress.live, fallback: progress.fallback, duplicates: progress.duplicates,
                redelivered: progress.redelivered, shed: 0, missing: progress.arrived.missing,
                seconds: seconds, sentSeconds: seconds), notSent: progress.notSent)
        }
    }

    private static func run(on group: DispatchGroup, _ body: @escaping @Sendable () -> Void) {
        group.enter()
        Thread {
            body()
            group.leave()
        }.start()
    }

    /// B's side: counts each sequence once; acks inbox items in batches.
    private static func receive(_ b: BlockingSocket, progress: Progress, count: Int, deadline: UInt64) {
        var toAck: [UInt64] = []
        var ackID: UInt32 = 100
        func flushAcks() {
            guard !toAck.isEmpty, let body = try? LocalAPIJSON.encode(MeshInboxAckRequest(ids: toAck)) else { return }
            ackID += 1
            try? b.write(LocalAPIFrame(kind: .request, operation: .inboxAck, requestID: ackID, body: body))
            toAck.removeAll(keepingCapacity: true)
        }
        while DispatchTime.now().uptimeNanoseconds < deadline {
            guard let frame = try? b.read(until: { _ in true }) else { break }
            guard frame.kind == .event, case .envelope(let event)? = try? LocalAPIDataEvent.decode(frame) else { continue }
            let payload = event.envelope.payload
            guard payload.count >= 8 else { continue }
            if event.inboxID != 0 { toAck.append(event.inboxID) }
            let value = payload.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            guard value >= 1, value <= UInt64(count) else { continue }   // a reachability probe
            let sequence = Int(value - 1)
            let finished: Bool = progress.lock.withLock {
                if !progress.arrived.arrive(sequence) {
                    if event.isRedelivery { progress.redelivered += 1 } else { progress.duplicates += 1 }
                } else {
                    progress.lastArrival = DispatchTime.now().uptimeNanoseconds
                    if event.inboxID == 0 { progress.live += 1 } else { progress.fallback += 1 }
                }
                return progress.arrived.isComplete
            }
            if toAck.count >= 1_000 || (finished && !toAck.isEmpty) { flushAcks() }
            if finished { return }
        }
        flushAcks()
        progress.lock.withLock { progress.failure = "B's app stopped reading after \(progress.arrived.distinct) of \(count)" }
    }

    /// A's side: reads every reply (counting those whose outcome is not `expected`).
    private static func readReplies(_ a: BlockingSocket, progress: Progress, count: Int,
                                    expected: MeshSendReply.Outcome, deadline: UInt64) {
        var replies = 0, notSent = 0
        while replies < count, DispatchTime.now().uptimeNanoseconds < deadline {
            guard let frame = try? a.read(until: { $0.kind != .event }) else { break }
            replies += 1
            if frame.kind != .reply || MeshSendReply(compactBody: frame.body)?.outcome != expected { notSent += 1 }
        }
        progress.lock.withLock { progress.notSent = notSent }
    }
}
