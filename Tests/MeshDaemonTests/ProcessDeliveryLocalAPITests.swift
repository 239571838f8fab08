#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MeshLocalAPI
import NIOCore
import SessionMesh
import SessionMeshClient
import Testing

/// Timer anchors across skewed clocks, sessions, and malformed local-API input against real
/// `meshd` processes.
@Suite("local API data operations between meshd processes", .serialized,
       .enabled(if: ChildProcess.executable("meshd") != nil && ChildProcess.executable("meshctl") != nil,
                "meshd/meshctl are not built (run `swift build` first)"))
struct ProcessDeliveryLocalAPITests {
    /// A runs 2.5 s ahead (`--clock-offset-ms 2500`). Its app, living on A's clock, sets a timer
    /// anchor; B's app receives it rewritten into B's clock: both compute the same elapsed time
    /// for the same real instant, within the receiver's clock-offset estimate's error bound (half
    /// the round trip of its best ping: well under a millisecond on an idle loopback, tens of
    /// milliseconds on a loaded machine) or 10 ms, whichever is larger. And the other way round.
    @Test func timerAnchorsAreRewrittenIntoTheReceiversClock() async throws {
        let pair = try await DaemonPair.start(extraA: ["--clock-offset-ms", "2500"])
        defer { pair.stopNow() }
        // Wait for B's clock-offset estimate of A (peer clock minus ours ≈ +2500 ms).
        let offset = try? await eventually("B's estimate of A's clock offset", timeout: 10) { () -> Double? in
            let peer = try await pair.b.peers().first { $0["deviceID"] as? String == pair.idA }
            guard let value = peer?["clockOffsetMilliseconds"] as? Double, abs(value - 2500) < 50 else { return nil }
            return value
        }
        print("process figure: B estimates A's clock offset at \(offset.map { String(format: "%.2f ms", $0) } ?? "nothing")")
        #expect(offset != nil)

        let appA = try await MeshClient.connect(socketPath: pair.a.socketPath)
        let appB = try await MeshClient.connect(socketPath: pair.b.socketPath)
        defer { Task { await appA.close(); await appB.close() } }
        let onA = try await appA.attach(features: ["timer"], app: "timer-a")
        let onB = try await appB.attach(features: ["timer"], app: "timer-b")
        let skew = 2.5
        let session = UUID()

        // A → B: A's app reads A's (skewed) clock. The estimate B rewrites with is the one of
        // some instant between these two reads of it: the larger bound of the two applies.
        let toleranceBeforeOnB = try await Self.tolerance(pair.b, estimating: pair.idA, trueOffset: 2500)
        let clockA = Date().addingTimeInterval(skew)
        let anchorA = SessionTimerAnchor.started(at: clockA.addingTimeInterval(-30), duration: 600)
        #expect(try await appA.setTimerAnchor(anchorA, sessionID: session, featureID: "timer", revision: 1))
        let receivedB = try await Self.nextAnchor(onB, timeout: 10)
        #expect(receivedB.from == pair.idA)
        #expect(receivedB.revision == 1)
        let realNow = Date()
        let elapsedOnA = anchorA.elapsed(at: realNow.addingTimeInterval(skew))
        let elapsedOnB = receivedB.anchor.anchor.elapsed(at: realNow)
        let toleranceOnB = max(toleranceBeforeOnB, try await Self.tolerance(pair.b, estimating: pair.idA, trueOffset: 2500))
        print("process figure: anchor A→B elapsed on A \(elapsedOnA) s, on B \(elapsedOnB) s (tolerance \(toleranceOnB) s)")
        #expect(abs(elapsedOnA - elapsedOnB) <= toleranceOnB)
        #expect(abs((anchorA.remaining(at: realNow.addingTimeInterval(skew)) ?? 0) - (receivedB.anchor.anchor.remaining(at: realNow) ?? 0)) <= toleranceOnB)

        // B → A, paused: A's app computes with A's clock.
        let toleranceBeforeOnA = try await Self.tolerance(pair.a, estimating: pair.idB, trueOffset: -2500)
        let anchorB = SessionTimerAnchor.started(at: Date().addingTimeInterval(-12)).paused(at: Date().addingTimeInterval(-2))
        #expect(try await appB.setTimerAnchor(anchorB, sessionID: session, featureID: "timer", revision: 2))
        let receivedA = try await Self.nextAnchor(onA, timeout: 10)
        let now = Date()
        let toleranceOnA = max(toleranceBeforeOnA, try await Self.tolerance(pair.a, estimating: pair.idB, trueOffset: -2500))
        #expect(abs(anchorB.elapsed(at: now) - receivedA.anchor.anchor.elapsed(at: now.addingTimeInterval(skew))) <= toleranceOnA)
        #expect(receivedA.anchor.isPaused)

        // A lower revision is not stored.
        #expect(try await appA.setTimerAnchor(anchorA, sessionID: session, featureID: "timer", revision: 1) == false)
    }

    /// How far an anchor `daemon` rewrote from `peer` may be off, in seconds: the error bound of
    /// its estimate of that peer's clock offset, at least 10 ms.
    /// Also checks what that bound promises: the estimate is within it of the true offset.
    static func tolerance(_ daemon: DaemonProcess, estimating peer: String, trueOffset: Double) async throws -> Double {
        // The daemon may not have measured this peer yet (the test waited for one direction only).
        let (offset, bound) = try await eventually("\(daemon.name)'s clock-offset estimate of the peer", timeout: 10) {
            () -> (Double, Double)? in
            let report = try await daemon.peers().first { $0["deviceID"] as? String == peer }
            guard let offset = report?["clockOffsetMilliseconds"] as? Double,
                  let bound = report?["clockOffsetErrorMilliseconds"] as? Double else { return nil }
            return (offset, bound)
        }
        print("process figure: \(daemon.name) estimates the peer's clock offset at \(offset) ± \(bound) ms (true \(trueOffset) ms)")
        #expect(abs(offset - trueOffset) <= bound + 1, "the estimate is within its error bound of the true offset")
        return max(0.010, (bound + 1) / 1000)
    }

    /// Sessions: announced on A, listed on B (`meshctl sessions --json`), shown by `watch`, and
    /// closing is awaitable and reported as delivered to B.
    @Test func sessionsReplicateAndCloseIsAwaitable() async throws {
        let pair = try await DaemonPair.start()
        defer { pair.stopNow() }
        let watch = try WatchProcess(pair.b, feature: "demo")
        defer { watch.stopNow() }
        try await watch.next(type: "attached", timeout: 10)
        let app = try await MeshClient.connect(socketPath: pair.a.socketPath)
        defer { Task { await app.close() } }
        let observer = try await app.attach(features: ["demo"], app: "owner")
        try await ProcessFixtures.awaitFeatureReachable(observer, peer: pair.idB, feature: "demo", timeout: 8)
        let session = UUID()
        try await app.announceSession(sessionID: session, featureID: "demo", owner: pair.idA, status: "running")
        let announced = try await watch.next(type: "session", timeout: 10)
        #expect(announced["sessionID"] as? String == session.uuidString)
        #expect(announced["status"] as? String == "running")

        let listed = try await pair.b.meshctl(["sessions", "--json"])
        let sessions = try #require((try JSONSerialization.jsonObject(with: Data(listed.output.utf8)) as? [String: Any])?["sessions"] as? [[String: Any]])
        #expect(sessions.contains { $0["sessionID"] as? String == session.uuidString && $0["sourcePeer"] as? String == pair.idA })
        let human = try await pair.b.meshctl(["sessions"])
        #expect(human.output.contains(session.uuidString), "\(human.output)")

        let closed = try await app.closeSession(sessionID: session, featureID: "demo")
        #expect(closed.delivered == [pair.idB], "B is reachable, so the close is delivered before the call returns")
        #expect(closed.queued.isEmpty)
        let change = try await watch.next(type: "session", timeout: 10) { $0["change"] as? String == "closed" }
        #expect(change["status"] as? String == "closed")
    }

    /// Malformed frames of many shapes, one connection each, while an attached watch on B and a
    /// healthy client on A keep being served; each bad connection gets a clear error.
    @Test func malformedFramesNeverDisturbOtherClients() async throws {
        let pair = try await DaemonPair.start()
        defer { pair.stopNow() }
        let watch = try WatchProcess(pair.b, feature: "demo")
        defer { watch.stopNow() }
        try await watch.next(type: "attached", timeout: 10)
        let healthy = try await MeshClient.connect(socketPath: pair.a.socketPath)
        defer { Task { await healthy.close() } }

        var shapes = Self.malformedShapes()
        var rng = SeededGenerator(seed: SeededGenerator.seed(for: "malformedFramesNeverDisturbOtherClients"))
        for index in 0..<20 {
            shapes.append(("random \(index)", (0..<Int.random(in: 1...200, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }, nil))
        }
        var sequence: UInt64 = 0
        for (name, bytes, expectedCode) in shapes {
            let socket = try RawSocket(path: pair.a.socketPath, receiveTimeout: 3)
            socket.send(bytes)
            socket.shutdownWrite()
            let answer = try await socket.readFrame()
            if let expectedCode {
                let body = try answer.map { try LocalAPIJSON.decode(LocalAPIErrorBody.self, from: $0.body, operation: $0.operation) }
                #expect(answer?.kind == .error && body?.code == expectedCode, "\(name): got \(body?.code ?? "nothing")")
            }
            sequence += 1
            try await healthy.send(envelope: ProcessFixtures.envelope(sequence, payload: "after \(name)"), mode: .reliableEventually)
            let delivered = try await watch.next(type: "envelope", timeout: 10)
            #expect(delivered["payload"] as? String == "after \(name)")
        }
        #expect(try await healthy.status().deviceID == pair.idA)
        print("process figure: \(shapes.count) malformed connections, the watch got all \(sequence) items sent in between")
    }

    static func nextAnchor(_ attachment: MeshAttachment, timeout: Double) async throws -> MeshAnchorEvent {
        let found = try await withDeadline(timeout) { () -> MeshAnchorEvent? in
            for await event in attachment.events { if case .anchor(let anchor) = event { return anchor } }
            return nil
        }
        guard let anchor = found ?? nil else { throw DaemonProcessError("no anchor event within \(timeout) s") }
        return anchor
    }

    /// (name, bytes, expected error code or nil when any error/close is fine).
    static func malformedShapes() -> [(String, [UInt8], String?)] {
        func frame(_ operation: UInt16, flags: UInt16 = 0, kind: UInt8 = 1, version: UInt8 = 1, body: [UInt8], length: UInt32? = nil) -> [UInt8] {
            var buffer = ByteBuffer()
            buffer.writeInteger(UInt16(0x534D))
            buffer.writeInteger(version)
            buffer.writeInteger(kind)
            buffer.writeInteger(operation)
            buffer.writeInteger(flags)
            buffer.writeInteger(UInt32(7))
            buffer.writeInteger(length ?? UInt32(body.count))
            buffer.writeBytes(body)
            return Array(buffer.readableBytesView)
        }
        let envelope = (try? SessionWireCodec.encode(ProcessFixtures.envelope(1))) ?? []
        let snapshot = (try? SessionWireCodec.encode(ProcessFixtures.snapshot(revision: 1, state: "s"))) ?? []
        return [
            ("http request", Array("GET / HTTP/1.1\r\n\r\n".utf8), "bad-magic"),
            ("version 9", frame(0x0100, version: 9, body: []), "unsupported-version"),
            ("kind 7", frame(0x0100, kind: 7, body: []), "bad-frame"),
            ("reply kind", frame(0x0100, kind: 2, body: []), "unexpected-kind"),
            ("unknown flags", frame(0x0101, flags: 0x8001, body: []), "bad-frame"),
            ("4 GiB length", frame(0x0101, flags: 1, body: [], length: 0xFFFF_FFFF), "frame-too-large"),
            ("truncated body", Array(frame(0x0100, body: Array(#"{"features":["demo"]}"#.utf8)).dropLast(5)), "bad-frame"),
            ("attach not JSON", frame(0x0100, body: Array("{features".utf8)), "bad-request"),
            ("attach features a number", frame(0x0100, body: Array(#"{"features":7}"#.utf8)), "bad-request"),
            ("send garbage", frame(0x0101, flags: 1, body: [2, 0, 1, 2, 3]), "bad-request"),
            ("send truncated envelope", frame(0x0101, flags: 1, body: [2, 0] + envelope.dropLast(3)), "bad-request"),
            ("send target past the end", frame(0x0101, flags: 1, body: [2, 200, 65]), "bad-request"),
            ("send snapshot as envelope", frame(0x0101, flags: 1, body: [2, 0] + snapshot), "bad-request"),
            ("publish envelope as snapshot", frame(0x0102, flags: 1, body: [0] + envelope), "bad-request"),
            ("inbox.ack strings", frame(0x0109, body: Array(#"{"ids":["x"]}"#.utf8)), "bad-request"),
            ("anchor.set missing anchor", frame(0x0105, body: Array(#"{"sessionID":"0D1E2F30-4A5B-4C6D-8E9F-A0B1C2D3E4F5","featureID":"demo","revision":1}"#.utf8)), "bad-request"),
            ("empty", [], nil),
            ("half a header", [0x53, 0x4D, 1, 1, 1], "bad-frame"),
        ]
    }
}
