#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MeshCore
import MeshLocalAPI
import MeshMQTT
import NIOCore
import SessionMesh

/// Latest state after a receiver's `kill -9`, on both systems: while the receiver is dead the
/// sender publishes `revisions` states (128 bytes) of one key; then the receiver starts again and
/// the probe takes how long it took until it holds the last one, and how many states it was
/// handed on the way (the latest-snapshot slot replaces older states; a persistent MQTT session
/// queues every one and the retained message comes on top).
struct LatestStateResult {
    var seconds: Double
    var handed: Int
    var reached: Bool
}

enum AfterKillProbes {
    /// SessionMesh: snapshots through A (`snapshot.publish`) while B is killed; B restarts on its
    /// state folder and port; B's app attaches and reads `snapshot.latest` until it holds the
    /// last revision, counting the `snapshot` events it was sent meanwhile.
    static func meshLatest(sender: String, receiver b: BenchDaemon, revisions: Int, feature: String) throws -> LatestStateResult {
        let a = try BlockingSocket(path: sender)
        defer { a.close() }
        do {
            let first = try BlockingSocket(path: b.socketPath)
            defer { first.close() }
            try LeanAppPair.attach(first, app: feature, feature: feature, reachableFrom: a)
        }
        b.kill9()
        let session = UUID()
        for revision in 1...revisions {
            let snapshot = AnySessionSyncSnapshot(
                metadata: SessionSyncMetadata(sessionID: session, featureID: feature, sourcePeerID: "bench-lean", eventID: UUID(),
                                              sequence: UInt64(revision), causalTimestamp: Date(), payloadType: "bench-state"),
                revision: UInt64(revision), state: Data(repeating: 0x5a, count: 128))
            try a.write(LocalAPIFrame(kind: .request, operation: .snapshotPublish, flags: .binaryBody, requestID: UInt32(revision),
                                      body: try MeshSnapshotPublishRequest(snapshot: snapshot).encode()))
            guard try a.read(until: { $0.kind != .event }).kind == .reply else {
                throw BenchError("latest-state probe: A refused snapshot revision \(revision)")
            }
        }
        let start = DispatchTime.now().uptimeNanoseconds
        try b.restartBlocking()
        let socket = try BlockingSocket(path: b.socketPath)
        defer { socket.close() }
        try socket.write(LocalAPIFrame(kind: .request, operation: .attach, requestID: 1,
                                       body: ByteBuffer(string: #"{"features":["\#(feature)"],"app":"\#(feature)"}"#)))
        _ = try socket.read(until: { $0.kind != .event })
        var handed = 0
        var requestID: UInt32 = 10
        let request = try LocalAPIJSON.encode(MeshSnapshotLatestRequest(featureID: feature, sessionID: session))
        while DispatchTime.now().uptimeNanoseconds - start < 20_000_000_000 {
            requestID += 1
            try socket.write(LocalAPIFrame(kind: .request, operation: .snapshotLatest, requestID: requestID, body: request))
            let reply = try socket.read(until: { frame in
                if frame.kind == .event, case .snapshot? = try? LocalAPIDataEvent.decode(frame) { handed += 1 }
                return frame.kind != .event
            })
            if reply.kind == .reply, let latest = try? MeshSnapshotLatestReply.decode(reply.body),
               latest.snapshot.revision == UInt64(revisions) {
                return LatestStateResult(seconds: Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9, handed: handed, reached: true)
            }
            usleep(1_000)
        }
        return LatestStateResult(seconds: 20, handed: handed, reached: false)
    }

    /// Mosquitto: a `mosquitto_sub` with a persistent session at QoS 1 on the receiving broker is
    /// killed; `mosquitto_pub -r -q 1` publishes the states, retained, on the sending broker;
    /// the subscriber starts again with the same client ID and the probe waits for the last one.
    static func mqttLatest(pair: MQTTRawPair, sendPort: Int, receivePort: Int, revisions: Int, topic: String) throws -> LatestStateResult {
        struct Seen { var lines = 0; var last: UInt64 = 0; var lastAt: UInt64 = 0 }
        let seen = Locked(Seen())
        let subscriber = try MosquittoSubscriber(port: receivePort, topic: topic, format: "%p") { line, _ in
            let revision = MosquittoSubscriber.sequence(line) ?? 0
            let now = DispatchTime.now().uptimeNanoseconds
            seen.withLock { state in
                state.lines += 1
                if revision > state.last { state.last = revision; state.lastAt = now }
            }
        }
        defer { subscriber.stop() }
        // Subscribed (its session exists) once a probe (revision 0) comes through the bridge.
        let ready = Date().addingTimeInterval(10)
        while seen.withLock({ $0.lines }) == 0 {
            guard Date() < ready else { throw BenchError("latest-state probe: mosquitto_sub on \(receivePort) never got a probe") }
            try pair.publishOne(topic: topic, payload: Array(String(repeating: "0", count: 16).utf8), qos: .atLeastOnce)
            usleep(50_000)
        }
        subscriber.kill9()
        seen.withLock { $0 = Seen() }
        let lines = (1...revisions).map { String(format: "%016llx", UInt64($0)) + String(repeating: "x", count: 112) }.joined(separator: "\n") + "\n"
        let file = NSTemporaryDirectory() + "mesh-bench-states-\(getpid()).txt"
        try lines.write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let publisher = Process()
        publisher.executableURL = URL(fileURLWithPath: "/usr/bin/mosquitto_pub")
        publisher.arguments = ["-h", "127.0.0.1", "-p", "\(sendPort)", "-t", topic, "-q", "1", "-r", "-l"]
        publisher.standardInput = FileHandle(forReadingAtPath: file)
        publisher.standardOutput = FileHandle.nullDevice
        publisher.standardError = FileHandle.nullDevice
        try publisher.run()
        publisher.waitUntilExit()
        let start = try subscriber.start()
        while DispatchTime.now().uptimeNanoseconds - start < 20_000_000_000 {
            let state = seen.withLock { $0 }
            if state.last == UInt64(revisions) {
                usleep(200_000)   // what else the broker hands over right after it
                return LatestStateResult(seconds: Double(state.lastAt - start) / 1e9, handed: seen.withLock { $0.lines }, reached: true)
            }
            usleep(1_000)
        }
        return LatestStateResult(seconds: 20, handed: seen.withLock { $0.lines }, reached: false)
    }

    /// Mosquitto's side of `LeanKillProbe`: `count` items of `bytes` published at QoS 1 on the
    /// sending broker (handed to libmosquitto at once, as an app's client library queues them);
    /// the receiving `mosquitto_sub` (persistent session) is killed with SIGKILL after `killAfter`
    /// distinct items and started again with the same client ID at once.
    static func mqttKill(pair: MQTTRawPair, receivePort: Int, count: Int, bytes: Int, killAfter: Int, topic: String) throws -> LeanKillProbe.Result {
        struct Seen {
            var arrived: ArrivalSet
            var duplicates = 0, probes = 0
            var lastArrival: UInt64 = 0, killedAt: UInt64 = 0, firstAfterKill: UInt64 = 0
        }
        let seen = Locked(Seen(arrived: ArrivalSet(count: count)))
        let subscriber = try MosquittoSubscriber(port: receivePort, topic: topic, format: "%x") { line, incarnation in
            guard let value = MosquittoSubscriber.sequence(line) else { return }
            let now = DispatchTime.now().uptimeNanoseconds
            seen.withLock { state in
                guard value >= 1, value <= UInt64(count) else { state.probes += 1; return }
                guard state.arrived.arrive(Int(value - 1)) else { state.duplicates += 1; return }
                state.lastArrival = now
                // The restarted subscriber's first line: what the killed one printed is not it.
                if incarnation > 0 && state.firstAfterKill == 0 { state.firstAfterKill = now }
            }
        }
        defer { subscriber.stop() }
        let ready = Date().addingTimeInterval(10)
        while seen.withLock({ $0.probes }) == 0 {
            guard Date() < ready else { throw BenchError("kill -9 probe: mosquitto_sub on \(receivePort) never got a probe") }
            try pair.publishOne(topic: topic, payload: [UInt8](repeating: 0, count: 16), qos: .atLeastOnce)
            usleep(50_000)
        }
        let start = DispatchTime.now().uptimeNanoseconds
        try pair.publishAll(topic: topic, count: count, bytes: bytes, qos: .atLeastOnce)
        var killed = false
        var last = -1
        var quietSince = DispatchTime.now().uptimeNanoseconds
        while true {
            let distinct = seen.withLock { $0.arrived.distinct }
            let now = DispatchTime.now().uptimeNanoseconds
            if distinct >= count { break }
            if distinct != last { last = distinct; quietSince = now } else if now - quietSince > 10_000_000_000 { break }
            if !killed && distinct >= killAfter {
                killed = true
                seen.withLock { $0.killedAt = now }
                subscriber.kill9()
                try subscriber.start()
            }
            usleep(1_000)
        }
        return seen.withLock { state in
            let seconds = Double(max(state.lastArrival, start) - start) / 1e9
            let gap = state.firstAfterKill > state.killedAt ? Double(state.firstAfterKill - state.killedAt) / 1e9 : 0
            return LeanKillProbe.Result(perSecond: Double(state.arrived.distinct) / max(seconds, 1e-9), lost: state.arrived.missing,
                                        unmarkedDuplicates: state.duplicates, redelivered: 0, gap: gap)
        }
    }
}
