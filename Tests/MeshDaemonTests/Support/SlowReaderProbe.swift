#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MeshLocalAPI
import NIOCore
import SessionMesh
import SessionMeshClient

/// Helpers of `ProcessSlowReaderTests`: a bounded realtime flood, RSS sampling, and a stalled
/// raw-socket app that starts reading again.
enum SlowReaderProbe {
    /// What a flood did.
    struct Flood: Sendable {
        var sent = 0
        var queued = 0
        var seconds = 0.0
    }

    /// What the stalled app read once it read again.
    struct Drain: Sendable {
        var attachReplied = false
        var frames = 0
        var dropped: [UInt64] = []
        var live = 0
        var inboxIDs = Set<UInt64>()
        /// Inbox envelopes read, copies included.
        var inboxEnvelopes = 0
        var redeliveries = 0
        var acknowledged = 0
        var seconds = 0.0
    }

    /// `VmRSS` (or another field of /proc/PID/status, e.g. `RssAnon`) of `pid` in KiB.
    static func residentKiB(_ pid: Int32, field: String = "VmRSS") -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix(field + ":") {
            return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
        }
        return nil
    }

    /// What sampling during a flood saw.
    struct Samples: Sendable {
        var peakKiB = 0
        var slowestStatus = Duration.zero
        var statusCalls = 0
        /// Every status call's duration, in order.
        var statusTimes: [Duration] = []
        /// The median status call.
        var medianStatus: Duration { statusTimes.isEmpty ? .zero : statusTimes.sorted()[statusTimes.count / 2] }
        /// (seconds since the start, RSS in MiB, anonymous RSS in MiB), one per second.
        var trajectory: [(Int, Int, Int)] = []
    }

    /// Until cancelled (at most 2 000 rounds): samples `pid`'s RSS and times a `status` call of
    /// `observer`, once per batch the flood sent (`batches` is notified per batch).
    static func sample(_ pid: Int32, observer: MeshClient, afterEach batches: ChangeSignal) async throws -> Samples {
        var samples = Samples()
        let clock = ContinuousClock()
        let start = clock.now
        var seen = batches.generation
        for _ in 0..<2_000 where !Task.isCancelled {
            let rss = residentKiB(pid) ?? 0
            samples.peakKiB = max(samples.peakKiB, rss)
            let second = Int((clock.now - start).components.seconds)
            if samples.trajectory.last.map({ $0.0 < second }) ?? true { samples.trajectory.append((second, rss / 1024, (residentKiB(pid, field: "RssAnon") ?? 0) / 1024)) }
            let took: Duration
            do {
                took = try await clock.measure { _ = try await observer.status() }
            } catch {
                if Task.isCancelled { break }
                throw error
            }
            samples.slowestStatus = max(samples.slowestStatus, took)
            samples.statusCalls += 1
            samples.statusTimes.append(took)
            await batches.wait(after: seen, until: clock.now + .seconds(1))
            seen = batches.generation
        }
        samples.peakKiB = max(samples.peakKiB, residentKiB(pid) ?? 0)
        return samples
    }

    /// Sends `count` realtime envelopes of 128 B to `peer` in batches, stopping after `seconds`.
    /// On a loaded machine the flood goes on past `seconds` until `atLeast` envelopes were
    /// answered (at most 4 × `seconds`), so the bounds under test are always passed.
    static func flood(_ app: MeshClient, to peer: String, count: Int, batch: Int, seconds: Double,
                      atLeast: Int = 20_000, batches: ChangeSignal? = nil) async throws -> Flood {
        defer { batches?.notify() }
        let payload = String(repeating: "x", count: 128)
        let start = Date()
        var result = Flood()
        var next = 1
        func goesOn() -> Bool {
            let elapsed = Date().timeIntervalSince(start)
            return elapsed < seconds || (result.sent < min(atLeast, count) && elapsed < 4 * seconds)
        }
        while next <= count, goesOn() {
            let envelopes = (next..<min(next + batch, count + 1)).map {
                ProcessFixtures.envelope(UInt64($0), feature: "flood", source: "flooder", payload: payload)
            }
            next += envelopes.count
            for answer in try await app.send(envelopes: envelopes, mode: .realtimeBestEffort, to: peer) {
                guard let reply = try? answer.get() else { continue }
                result.sent += 1
                if reply.outcome == .queued { result.queued += 1 }
            }
            batches?.notify()
        }
        result.seconds = Date().timeIntervalSince(start)
        return result
    }

    /// Reads the app's socket on its own thread until it has been quiet for `quiet` seconds at
    /// full speed or `seconds` have passed; inbox items are acknowledged through `acker` as they
    /// come, by a concurrent task, so reading never waits for an ack. While `pace` says slow, it
    /// reads at most `pace.slowChunk` bytes per `pace.slowPause` (and is never "quiet").
    static func drain(_ socket: RawSocket, acker: MeshClient, pace: ReadPace = ReadPace(slow: false),
                      quiet: Double, seconds: Double) async throws -> Drain {
        let (ids, continuation) = AsyncStream.makeStream(of: [UInt64].self, bufferingPolicy: .unbounded)
        let acking = Task { () -> Int in
            var acknowledged = 0
            for await batch in ids {
                var start = 0
                while start < batch.count {
                    let end = min(start + MeshInboxAckRequest.maximumIDs, batch.count)
                    acknowledged += (try? await acker.ackInbox(Array(batch[start..<end]))) ?? 0
                    start = end
                }
            }
            return acknowledged
        }
        var drain = try await blocking { readUntilQuiet(socket.fd, pace: pace, quiet: quiet, seconds: seconds, newIDs: continuation) }
        continuation.finish()
        drain.acknowledged = await acking.value
        return drain
    }

    private static func readUntilQuiet(_ fd: Int32, pace: ReadPace, quiet: Double, seconds: Double,
                                       newIDs: AsyncStream<[UInt64]>.Continuation) -> Drain {
        var drain = Drain()
        let start = Date()
        var lastByte = Date()
        var pending = ByteBuffer()
        var chunk = [UInt8](repeating: 0, count: 256 * 1024)
        while Date().timeIntervalSince(start) < seconds, Date().timeIntervalSince(lastByte) < quiet {
            let slow = pace.isSlow
            if slow {
                usleep(pace.slowPauseMicroseconds)
                lastByte = Date()
            }
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, 100) > 0 else { continue }
            let limit = slow ? min(pace.slowChunk, chunk.count) : chunk.count
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, limit, 0) }
            if count <= 0 { break }
            lastByte = Date()
            pending.writeBytes(chunk[0..<count])
            var fresh: [UInt64] = []
            while let frame = try? LocalAPIFrameDecoder.parse(&pending, maximumBodyLength: 16 << 20) {
                drain.frames += 1
                if frame.kind == .reply, frame.requestID == 1, frame.operation == .attach { drain.attachReplied = true }
                guard frame.kind == .event, let event = try? LocalAPIDataEvent.decode(frame) else { continue }
                switch event {
                case .eventsDropped(let dropped):
                    drain.dropped.append(dropped.dropped)
                case .envelope(let envelope) where envelope.inboxID == 0:
                    drain.live += 1
                case .envelope(let envelope):
                    drain.inboxEnvelopes += 1
                    if envelope.isRedelivery { drain.redeliveries += 1 }
                    if drain.inboxIDs.insert(envelope.inboxID).inserted { fresh.append(envelope.inboxID) }
                default:
                    break
                }
            }
            if !fresh.isEmpty { newIDs.yield(fresh) }
        }
        drain.seconds = Date().timeIntervalSince(start)
        return drain
    }

    /// The counters this test is about, for its printout.
    static func relevant(_ counters: [String: UInt64]) -> String {
        let keys = ["api.events.shed", "api.slow_reader.pauses", "delivery.realtime.received", "delivery.realtime.duplicates",
                    "delivery.realtime.shed_during_replay", "delivery.inbox.stored", "delivery.inbox.duplicates",
                    "delivery.inbox.delivered", "delivery.inbox.reoffered", "delivery.inbox.refused"]
        return keys.map { "\($0)=\(counters[$0] ?? 0)" }.joined(separator: " ")
    }
}

/// How fast a `SlowReaderProbe.drain` reads: slowly (a chunk, then a pause) until `speedUp()`.
final class ReadPace: @unchecked Sendable {
    let slowChunk: Int
    let slowPauseMicroseconds: UInt32
    private let lock = NSLock()
    private var slow: Bool

    init(slow: Bool, chunk: Int = 32 * 1024, pauseMicroseconds: UInt32 = 50_000) {
        self.slow = slow
        self.slowChunk = chunk
        self.slowPauseMicroseconds = pauseMicroseconds
    }

    var isSlow: Bool { lock.withLock { slow } }

    /// From now on the reader reads as fast as it can.
    func speedUp() { lock.withLock { slow = false } }
}
