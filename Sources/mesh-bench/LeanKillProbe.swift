#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MeshCore
import MeshLocalAPI
import NIOCore
import SessionMesh

/// Reliable throughput across a `kill -9` of the receiving daemon, with lean apps: A's app sends
/// `count` reliable items (≤ `lead` without A's reply), B's app acks what it receives; once it has
/// `killAfter` distinct items, B is killed with SIGKILL and started again on the same state folder
/// and port, and B's app attaches again. Counts what never arrived and what came twice.
enum LeanKillProbe {
    struct Result {
        var perSecond: Double
        var lost: Int
        /// Items seen again without the redelivery mark (a duplicate the app cannot tell).
        var unmarkedDuplicates: Int
        /// Items offered again marked as redeliveries (unacked when B was killed).
        var redelivered: Int
        /// From the kill to the first item after it, seconds.
        var gap: Double
    }

    private final class Progress: @unchecked Sendable {
        let lock = NSLock()
        var arrived: ArrivalSet
        var unmarked = 0
        var redelivered = 0
        var lastArrival: UInt64 = 0
        var killedAt: UInt64 = 0
        var firstAfterKill: UInt64 = 0
        var replies = 0
        init(count: Int) { arrived = ArrivalSet(count: count) }
    }

    static func run(sender: String, receiver b: BenchDaemon, count: Int, payloadBytes: Int, lead: Int, killAfter: Int,
                    feature: String) throws -> Result {
        let a = try BlockingSocket(path: sender)
        defer { a.close() }
        // Attach on B, and see the feature reachable through a socket of its own (the sender's
        // socket has a reply reader of its own below).
        do {
            let probe = try BlockingSocket(path: sender)
            defer { probe.close() }
            let first = try BlockingSocket(path: b.socketPath)
            defer { first.close() }
            try LeanAppPair.attach(first, app: feature, feature: feature, reachableFrom: probe)
        }
        let progress = Progress(count: count)
        let group = DispatchGroup()
        let start = DispatchTime.now().uptimeNanoseconds
        let deadline = start + 120_000_000_000
        let failure = Locked<String?>(nil)
        LeanPacedProbe.spawn(group) {
            do { try receive(b, feature: feature, count: count, killAfter: killAfter, progress: progress, deadline: deadline) } catch {
                failure.withLock { $0 = "\(error)" }
            }
        }
        LeanPacedProbe.spawn(group) {
            while progress.lock.withLock({ progress.replies }) < count, DispatchTime.now().uptimeNanoseconds < deadline {
                guard (try? a.read(until: { $0.kind != .event })) != nil else { break }
                progress.lock.withLock { progress.replies += 1 }
            }
        }
        let session = UUID(), prefix = UInt64.random(in: .min ... .max)
        var buffer = ByteBuffer()
        for index in 0..<count {
            while index - progress.lock.withLock({ progress.replies }) > lead, DispatchTime.now().uptimeNanoseconds < deadline { usleep(100) }
            var payload = Data(repeating: 0x5a, count: max(8, payloadBytes))
            for byte in 0..<8 { payload[byte] = UInt8(truncatingIfNeeded: UInt64(index + 1) >> (56 - 8 * byte)) }
            let eventID = UUID(uuid: withUnsafeBytes(of: (prefix, UInt64(index).bigEndian)) { $0.load(as: uuid_t.self) })
            let envelope = AnySessionSyncEnvelope(
                metadata: SessionSyncMetadata(sessionID: session, featureID: feature, sourcePeerID: "bench-lean", eventID: eventID,
                                              sequence: UInt64(index + 1), causalTimestamp: Date(), payloadType: "bench"),
                payload: payload)
            LocalAPIFrameEncoder.write(LocalAPIFrame(kind: .request, operation: .send, flags: .binaryBody, requestID: UInt32(index + 1),
                                                     body: try MeshSendRequest(mode: .reliableEventually, envelope: envelope).encode()),
                                       to: &buffer)
            if (index + 1) % 32 == 0 || index == count - 1 {
                try a.writeRaw(Array(buffer.readableBytesView))
                buffer.clear()
            }
        }
        group.wait()
        if let failure = failure.withLock({ $0 }) { throw BenchError("kill -9 probe: \(failure)") }
        return progress.lock.withLock {
            let seconds = Double(max(progress.lastArrival, start) - start) / 1e9
            let gap = progress.firstAfterKill > progress.killedAt ? Double(progress.firstAfterKill - progress.killedAt) / 1e9 : 0
            return Result(perSecond: Double(progress.arrived.distinct) / max(seconds, 1e-9), lost: progress.arrived.missing,
                          unmarkedDuplicates: progress.unmarked, redelivered: progress.redelivered, gap: gap)
        }
    }

    /// B's app: attaches, reads, acks every 256 items; kills and restarts B once; stops when every
    /// item arrived or nothing came for 10 s.
    private static func receive(_ daemon: BenchDaemon, feature: String, count: Int, killAfter: Int, progress: Progress,
                                deadline: UInt64) throws {
        var killed = false
        var quietSince = DispatchTime.now().uptimeNanoseconds
        while DispatchTime.now().uptimeNanoseconds < deadline {
            let b = try BlockingSocket(path: daemon.socketPath)
            defer { b.close() }
            try b.write(LocalAPIFrame(kind: .request, operation: .attach, requestID: 1,
                                      body: ByteBuffer(string: #"{"features":["\#(feature)"],"app":"\#(feature)"}"#)))
            var toAck: [UInt64] = []
            var ackID: UInt32 = 100
            func flushAcks() {
                guard !toAck.isEmpty, let body = try? LocalAPIJSON.encode(MeshInboxAckRequest(ids: toAck)) else { return }
                ackID += 1
                try? b.write(LocalAPIFrame(kind: .request, operation: .inboxAck, requestID: ackID, body: body))
                toAck.removeAll(keepingCapacity: true)
            }
            reading: while DispatchTime.now().uptimeNanoseconds < deadline {
                guard let frame = try? b.read(until: { _ in true }) else {
                    flushAcks()
                    if DispatchTime.now().uptimeNanoseconds - quietSince > 10_000_000_000 { return }
                    break reading
                }
                guard frame.kind == .event, case .envelope(let event)? = try? LocalAPIDataEvent.decode(frame) else { continue }
                let payload = event.envelope.payload
                guard payload.count >= 8 else { continue }
                if event.inboxID != 0 { toAck.append(event.inboxID) }
                let value = payload.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                guard value >= 1, value <= UInt64(count) else { continue }
                let now = DispatchTime.now().uptimeNanoseconds
                quietSince = now
                let (distinct, finished): (Int, Bool) = progress.lock.withLock {
                    let index = Int(value - 1)
                    if !progress.arrived.arrive(index) {
                        if event.isRedelivery { progress.redelivered += 1 } else { progress.unmarked += 1 }
                    } else {
                        progress.lastArrival = now
                        if progress.killedAt != 0 && progress.firstAfterKill == 0 { progress.firstAfterKill = now }
                    }
                    return (progress.arrived.distinct, progress.arrived.isComplete)
                }
                if toAck.count >= 256 || finished { flushAcks() }
                if finished { return }
                if !killed && distinct >= killAfter {
                    killed = true
                    progress.lock.withLock { progress.killedAt = DispatchTime.now().uptimeNanoseconds }
                    try daemon.restartBlocking()
                    break reading
                }
            }
        }
    }
}
