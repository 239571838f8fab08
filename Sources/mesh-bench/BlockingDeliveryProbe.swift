#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MeshLocalAPI
import NIOCore
import SessionMesh

/// Realtime one-way latency with lean apps: plain blocking Unix sockets on both sides (no NIO,
/// no Swift concurrency), so the figure is the daemons' share of app → A → B → app.
///
/// One thread sends on A's socket, then blocks on B's socket until the envelope event arrives,
/// then reads A's send reply (`LeanAppPair`). Messages whose reply says anything but `sent` (the
/// realtime path fell back to the queue) are counted and left out of the samples.
struct BlockingDeliveryProbe {
    /// Samples in nanoseconds, and how many sends did not go out as a live datagram.
    struct Result {
        var samples: [UInt64]
        var notLive: Int
    }

    static func run(sender: String, receiver: String, count: Int, payloadBytes: Int) throws -> Result {
        let pair = try LeanAppPair(sender: sender, receiver: receiver, payloadBytes: payloadBytes)
        defer { pair.close() }
        var samples: [UInt64] = []
        samples.reserveCapacity(count)
        var notLive = 0
        for index in 0..<(count + 200) {
            let sample = try pair.oneMessage(index: index)
            if index >= 200 {
                if let sample { samples.append(sample) } else { notLive += 1 }
            }
        }
        return Result(samples: samples, notLive: notLive)
    }
}

/// Two lean apps, one on each daemon of a paired pair: the sending app's blocking socket to A
/// and the receiving app's, attached to a feature, to B. One message at a time.
final class LeanAppPair {
    private let a: BlockingSocket
    private let b: BlockingSocket
    private let payloadBytes: Int
    private let feature = "bench-lean"
    private let session = UUID()

    /// Attaches the receiving app on B and waits (≤ 10 s) until realtime sends from A go out live.
    init(sender: String, receiver: String, payloadBytes: Int) throws {
        a = try BlockingSocket(path: sender)
        do {
            b = try BlockingSocket(path: receiver)
        } catch {
            a.close()
            throw error
        }
        self.payloadBytes = payloadBytes
        do {
            try Self.attach(b, app: "bench-lean", feature: feature, reachableFrom: a)
        } catch {
            close()
            throw error
        }
    }

    func close() {
        a.close()
        b.close()
    }

    /// Sends one realtime envelope on A and waits for it on B: nanoseconds from the send to its
    /// arrival, or nil when A's reply said it did not go out live (it took the durable path).
    func oneMessage(index: Int) throws -> UInt64? {
        var payload = Data(count: max(8, payloadBytes))
        payload[0] = UInt8(truncatingIfNeeded: index)
        let envelope = AnySessionSyncEnvelope(
            metadata: SessionSyncMetadata(sessionID: session, featureID: feature, sourcePeerID: "bench-lean", eventID: UUID(),
                                          sequence: UInt64(index + 1), causalTimestamp: Date(), payloadType: "bench"),
            payload: payload)
        let body = try MeshSendRequest(mode: .realtimeBestEffort, envelope: envelope).encode()
        let eventID = envelope.metadata.eventID
        let start = DispatchTime.now().uptimeNanoseconds
        try a.write(LocalAPIFrame(kind: .request, operation: .send, flags: .binaryBody, requestID: UInt32(truncatingIfNeeded: index + 10), body: body))
        _ = try b.read(until: { frame in
            guard frame.kind == .event, case .envelope(let event)? = try? LocalAPIDataEvent.decode(frame) else { return false }
            return event.envelope.metadata.eventID == eventID
        })
        let arrived = DispatchTime.now().uptimeNanoseconds
        let reply = try a.read(until: { $0.kind != .event })
        let live = reply.kind == .reply && MeshSendReply(compactBody: reply.body)?.outcome == .sent
        return live ? arrived &- start : nil
    }

    /// Attaches the receiving app `app` to `feature` on `b`, then waits until realtime sends of
    /// the feature from `a` go out live (A has learnt of the attached app: presence).
    static func attach(_ b: BlockingSocket, app: String, feature: String, reachableFrom a: BlockingSocket) throws {
        let attach = ByteBuffer(string: #"{"features":["\#(feature)"],"app":"\#(app)"}"#)
        try b.write(LocalAPIFrame(kind: .request, operation: .attach, requestID: 1, body: attach))
        guard try b.read(until: { $0.kind != .event }).kind == .reply else { throw BenchError("\(app): attach on B failed") }
        try waitForReachable(a, feature: feature)
    }

    /// Sends realtime probes of `feature` until one goes out live (≤ 10 s).
    private static func waitForReachable(_ a: BlockingSocket, feature: String) throws {
        let deadline = Date().addingTimeInterval(10)
        var id: UInt32 = 1_000_000
        while Date() < deadline {
            id += 1
            let envelope = AnySessionSyncEnvelope(
                metadata: SessionSyncMetadata(sessionID: UUID(), featureID: feature, sourcePeerID: "bench-lean", eventID: UUID(),
                                              sequence: 0, causalTimestamp: Date(), payloadType: "probe"),
                payload: Data(count: 8))
            try a.write(LocalAPIFrame(kind: .request, operation: .send, flags: .binaryBody, requestID: id,
                                      body: try MeshSendRequest(mode: .realtimeBestEffort, envelope: envelope).encode()))
            let reply = try a.read(until: { $0.kind != .event })
            if reply.kind == .reply, MeshSendReply(compactBody: reply.body)?.outcome == .sent { return }
            usleep(50_000)
        }
        throw BenchError("lean probe: the bench feature never became reachable from A")
    }
}

/// A blocking Unix-socket connection to a daemon's local API, reading whole frames.
///
/// `@unchecked Sendable`: one thread may read while another writes (writes touch no state of
/// this object, reads keep theirs in `pending`); two threads must never read at once.
final class BlockingSocket: @unchecked Sendable {
    private let fd: Int32
    private var pending = ByteBuffer()
    private var chunk = [UInt8](repeating: 0, count: 65_536)

    init(path: String) throws {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw BenchError("lean probe: socket() failed") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else {
            Glibc.close(fd)
            throw BenchError("lean probe: cannot connect to \(path)")
        }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    func close() { Glibc.close(fd) }

    func write(_ frame: LocalAPIFrame) throws {
        var buffer = ByteBuffer()
        LocalAPIFrameEncoder.write(frame, to: &buffer)
        try writeRaw(Array(buffer.readableBytesView))
    }

    /// Writes encoded frames, all of them (a blocking socket may take them in several calls).
    func writeRaw(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw BenchError("lean probe: send failed") }
            offset += n
        }
    }

    /// Reads frames until one satisfies `wanted` (others are skipped); at most 100 000 frames.
    func read(until wanted: (LocalAPIFrame) -> Bool) throws -> LocalAPIFrame {
        for _ in 0..<100_000 {
            while true {
                if let frame = try? LocalAPIFrameDecoder.parse(&pending) {
                    if wanted(frame) { return frame }
                    break
                }
                let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                guard n > 0 else { throw BenchError("lean probe: the daemon did not answer within 5 s") }
                pending.writeBytes(chunk[0..<n])
            }
        }
        throw BenchError("lean probe: the wanted frame never came")
    }
}
