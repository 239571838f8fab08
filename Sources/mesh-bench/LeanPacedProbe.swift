#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MeshCore
import MeshLocalAPI
import NIOCore
import SessionMesh

/// Paced realtime one-way latency with lean apps (blocking Unix sockets): `count` sends on A's
/// socket, one every `interval`, each payload carrying its sequence (bytes 0–7) and the monotonic
/// time it was sent at (bytes 8–15); a thread on B's socket takes the arrival time of each, a
/// third thread reads A's replies. Unlike `LeanAppPair.oneMessage`, the next message does not
/// wait for the last one, as in an app streaming a position or a cursor.
enum LeanPacedProbe {
    struct Result {
        var latencies: [UInt64]
        var missing: Int
        var duplicates: Int
        /// Sends whose reply was not `sent` (they took the durable fallback).
        var notLive: Int
    }

    private final class Arrivals: @unchecked Sendable {
        let lock = NSLock()
        var arrived: ArrivalSet
        var duplicates = 0
        var latencies: [UInt64] = []
        var notLive = 0
        init(count: Int) { arrived = ArrivalSet(count: count) }
    }

    static func run(sender: String, receiver: String, count: Int, intervalNanoseconds: UInt64, payloadBytes: Int,
                    feature: String) throws -> Result {
        let a = try BlockingSocket(path: sender)
        defer { a.close() }
        let b = try BlockingSocket(path: receiver)
        defer { b.close() }
        try LeanAppPair.attach(b, app: feature, feature: feature, reachableFrom: a)
        let arrivals = Arrivals(count: count)
        let group = DispatchGroup()
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(count) * intervalNanoseconds + 10_000_000_000
        spawn(group) {
            while DispatchTime.now().uptimeNanoseconds < deadline {
                guard let frame = try? b.read(until: { _ in true }) else { break }
                let now = DispatchTime.now().uptimeNanoseconds
                guard frame.kind == .event, case .envelope(let event)? = try? LocalAPIDataEvent.decode(frame) else { continue }
                let payload = [UInt8](event.envelope.payload)
                guard payload.count >= 16 else { continue }
                let sequence = payload[0..<8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                let sent = payload[8..<16].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                guard sequence >= 1, sequence <= UInt64(count) else { continue }
                let finished: Bool = arrivals.lock.withLock {
                    let index = Int(sequence - 1)
                    if !arrivals.arrived.arrive(index) { arrivals.duplicates += 1 } else {
                        arrivals.latencies.append(now &- sent)
                    }
                    return arrivals.arrived.isComplete
                }
                if finished { return }
            }
        }
        spawn(group) {
            var replies = 0, notLive = 0
            while replies < count, DispatchTime.now().uptimeNanoseconds < deadline {
                guard let frame = try? a.read(until: { $0.kind != .event }) else { break }
                replies += 1
                if frame.kind != .reply || MeshSendReply(compactBody: frame.body)?.outcome != .sent { notLive += 1 }
            }
            arrivals.lock.withLock { arrivals.notLive = notLive + (count - replies) }
        }
        let session = UUID(), prefix = UInt64.random(in: .min ... .max)
        let origin = DispatchTime.now().uptimeNanoseconds
        for index in 0..<count {
            let due = origin + UInt64(index) * intervalNanoseconds
            let now = DispatchTime.now().uptimeNanoseconds
            if due > now + 1_000 { usleep(UInt32((due - now) / 1_000)) }
            var payload = Data(repeating: 0x5a, count: max(16, payloadBytes))
            let stamp = DispatchTime.now().uptimeNanoseconds
            for byte in 0..<8 {
                payload[byte] = UInt8(truncatingIfNeeded: UInt64(index + 1) >> (56 - 8 * byte))
                payload[8 + byte] = UInt8(truncatingIfNeeded: stamp >> (56 - 8 * byte))
            }
            let eventID = UUID(uuid: withUnsafeBytes(of: (prefix, UInt64(index).bigEndian)) { $0.load(as: uuid_t.self) })
            let envelope = AnySessionSyncEnvelope(
                metadata: SessionSyncMetadata(sessionID: session, featureID: feature, sourcePeerID: "bench-lean", eventID: eventID,
                                              sequence: UInt64(index + 1), causalTimestamp: Date(), payloadType: "bench"),
                payload: payload)
            try a.write(LocalAPIFrame(kind: .request, operation: .send, flags: .binaryBody, requestID: UInt32(index + 1),
                                      body: try MeshSendRequest(mode: .realtimeBestEffort, envelope: envelope).encode()))
        }
        group.wait()
        return arrivals.lock.withLock {
            Result(latencies: arrivals.latencies, missing: arrivals.arrived.missing, duplicates: arrivals.duplicates,
                   notLive: arrivals.notLive)
        }
    }

    static func spawn(_ group: DispatchGroup, _ body: @escaping @Sendable () -> Void) {
        group.enter()
        Thread {
            body()
            group.leave()
        }.start()
    }
}
