import Foundation
import MeshLocalAPI
import SessionMesh
import Testing
@testable import MeshDaemon

/// The session directory's steps a test drives directly, on the router.
extension DeliveryRouter {
    /// A snapshot from `peer`, as the message consumer hands it over.
    func snapshotReceived(_ bytes: [UInt8], from peer: DeviceID, isReply: Bool) async {
        await directory.snapshotReceived(self, bytes, from: peer, isReply: isReply)
    }

    /// The watermark events a newly attached app of `features` gets.
    func currentWatermarks(features: Set<String>, sessionID: UUID?) -> [DeliveryEvent] {
        directory.currentWatermarks(self, features: features, sessionID: sessionID)
    }
}

extension DeliveryIntegration {
    @Suite("Delivery state: pending buffer, slots, requests, anchors, sessions", .serialized)
    struct DeliveryStateTests {
        @Test func preActivationKeepsTheLast200InOrderAndCollapsesSnapshots() async throws {
            let bed = DeliveryTestBed()
            defer { Task { await bed.shutdown() } }
            var (a, b) = try await bed.pair()
            let aFolder = a.running.stateDirectory, aPort = a.running.port
            let bFolder = b.running.stateDirectory, bPort = b.running.port
            await b.stop()
            await a.stop()
            a = try await bed.start(name: "alice", stateDirectory: aFolder, port: aPort)
            for index in 1...300 {
                let (envelope, encoded) = try RouterFixtures.envelope("p\(index)", sequence: UInt64(index))
                let outcome = try await a.router.send(envelope, encoded: encoded, mode: 1, to: b.id)
                #expect(outcome.outcome == "pending")
            }
            for revision in 1...3 {
                let (snapshot, encoded) = try RouterFixtures.snapshot(revision: UInt64(revision), state: "s\(revision)")
                #expect(try await a.router.publishSnapshot(snapshot, encoded: encoded, to: nil))
            }
            let counters = await a.router.counterValues()
            #expect(counters["pending.dropped"] == 100)
            #expect(counters["pending.collapsed"] == 2)
            #expect(counters["pending.queued"] == 201)
            b = try await bed.start(name: "bob", stateDirectory: bFolder, port: bPort)
            let sink = CollectingSink()
            _ = await b.router.attach(features: ["demo"], sink: sink)
            try await waitUntil("200 drained items and the snapshot", timeout: 10) {
                sink.envelopes.count >= 200 && !sink.snapshots.isEmpty
            }
            try await waitUntil("alice's outbox drained", timeout: 5) { try await a.router.queue().isEmpty }
            #expect(sink.envelopes.map { RouterFixtures.text($0.envelope) } == (101...300).map { "p\($0)" })
            #expect(sink.snapshots.map(\.revision) == [3])
            #expect(await a.router.counterValues()["pending.queued"] == 0)
            await bed.shutdown()
        }

        @Test func latestSnapshotSurvivesThePeerAndStaleRevisionsAreIgnored() async throws {
            let bed = DeliveryTestBed()
            defer { Task { await bed.shutdown() } }
            let (a, b) = try await bed.pair()
            let sink = CollectingSink()
            _ = await b.router.attach(features: ["demo"], sink: sink)
            let (five, fiveBytes) = try RouterFixtures.snapshot(revision: 5, state: "{\"page\":5}")
            #expect(try await a.router.publishSnapshot(five, encoded: fiveBytes, to: nil))
            try await waitUntil("snapshot at bob", timeout: 5) { sink.snapshots.count == 1 }
            let (three, threeBytes) = try RouterFixtures.snapshot(revision: 3, state: "{\"page\":3}")
            #expect(try await a.router.publishSnapshot(three, encoded: threeBytes, to: nil) == false)
            await b.router.snapshotReceived(threeBytes, from: a.deviceID, isReply: false)
            #expect((await b.router.counterValues()["delivery.snapshots.stale"] ?? 0) >= 1)
            await a.stop()
            let latest = try #require(try await b.router.latestSnapshot(featureID: "demo", peer: a.id, sessionID: nil))
            #expect(latest.peer == a.id)
            #expect(try SessionWireCodec.decodeSnapshot(latest.encoded).revision == 5)
            #expect(sink.snapshots.map(\.revision) == [5])
            #expect(try await b.router.latestSnapshot(featureID: "other", peer: nil, sessionID: nil) == nil)
            await bed.shutdown()
        }

        @Test func snapshotRequestsGoToTheAppOrAreAnsweredFromTheSlot() async throws {
            let bed = DeliveryTestBed()
            defer { Task { await bed.shutdown() } }
            let (a, b) = try await bed.pair()
            let sinkB = CollectingSink()
            _ = await b.router.attach(features: ["demo"], sink: sinkB)
            let (snapshot, encoded) = try RouterFixtures.snapshot(revision: 7, state: "seven")
            _ = try await a.router.publishSnapshot(snapshot, encoded: encoded, to: nil)
            try await waitUntil("push", timeout: 5) { sinkB.snapshots.count == 1 }
            try await b.router.requestSnapshot(sessionID: RouterFixtures.session, featureID: "demo", peer: a.id)
            try await waitUntil("answer from alice's slot", timeout: 5) { sinkB.snapshots.count == 2 }
            #expect(sinkB.snapshots.last?.revision == 7)
            #expect(await a.router.counterValues()["delivery.snapshot_requests.answered_from_slot"] == 1)
            let sinkA = CollectingSink()
            _ = await a.router.attach(features: ["demo"], sink: sinkA)
            try await b.router.requestSnapshot(sessionID: RouterFixtures.session, featureID: "demo", peer: a.id)
            try await waitUntil("request at alice's app", timeout: 5) {
                sinkA.all.contains { if case .snapshotRequest = $0 { true } else { false } }
            }
            await bed.shutdown()
        }

        @Test func anchorsAreRewrittenIntoTheReceiversClock() async throws {
            let bed = DeliveryTestBed()
            defer { Task { await bed.shutdown() } }
            let (a, b) = try await bed.pair(clockOffsetB: 2500)
            try await waitUntil("bob estimated alice's offset", timeout: 5) {
                await b.node.linkEstimate(of: a.deviceID).offsetNanoseconds != nil
            }
            let sink = CollectingSink()
            _ = await b.router.attach(features: ["demo"], sink: sink)
            let aNow = Date(timeIntervalSince1970: Double(a.router.clock.wallNanoseconds()) / 1e9)
            let anchor = SessionTimerAnchor.started(at: aNow.addingTimeInterval(-10), duration: 60)
            #expect(try await a.router.setAnchor(sessionID: RouterFixtures.session, featureID: "demo", revision: 1, anchor: anchor))
            #expect(try await a.router.setAnchor(sessionID: RouterFixtures.session, featureID: "demo", revision: 1, anchor: anchor) == false)
            let received = try await eventually("anchor at bob", timeout: 5) { () -> SessionTimerAnchor? in
                for case .anchor(_, _, _, _, let anchor) in sink.all { return anchor }
                return nil
            }
            let elapsedA = anchor.elapsed(at: Date(timeIntervalSince1970: Double(a.router.clock.wallNanoseconds()) / 1e9))
            let elapsedB = received.elapsed(at: Date(timeIntervalSince1970: Double(b.router.clock.wallNanoseconds()) / 1e9))
            print("anchor elapsed: alice \(elapsedA) s, bob \(elapsedB) s (bob's clock +2.5 s)")
            #expect(abs(elapsedA - elapsedB) < 0.010)
            await bed.shutdown()
        }

        @Test func sessionsReplicateAndCloseIsAwaitable() async throws {
            let bed = DeliveryTestBed()
            defer { Task { await bed.shutdown() } }
            let (a, b) = try await bed.pair()
            let sinkB = CollectingSink()
            _ = await b.router.attach(features: ["demo"], sink: sinkB)
            let session = UUID()
            try await a.router.announceSession(sessionID: session, featureID: "demo", owner: "alice-app", status: "running")
            try await waitUntil("bob lists the session", timeout: 5) {
                try await b.router.sessions(featureID: "demo").contains { $0.sessionID == session && $0.sourcePeer == a.id }
            }
            let closed = try await a.router.closeSession(sessionID: session, featureID: "demo")
            #expect(closed.delivered == [b.id] && closed.queued.isEmpty)
            try await waitUntil("closing envelope at bob", timeout: 5) {
                sinkB.envelopes.contains { $0.envelope.metadata.payloadType == DeliveryRouter.sessionClosedPayloadType }
            }
            try await waitUntil("closed at bob", timeout: 5) {
                try await b.router.sessions(featureID: "demo").first { $0.sessionID == session }?.status == "closed"
            }
            let (stale, staleBytes) = try RouterFixtures.snapshot(revision: 1, state: "revive?", session: session)
            await #expect(throws: MeshError.self) { _ = try await a.router.publishSnapshot(stale, encoded: staleBytes, to: nil) }
            await #expect(throws: MeshError.self) {
                try await a.router.announceSession(sessionID: session, featureID: "demo", owner: "x", status: "running")
            }
            // A stale snapshot from the peer does not revive it either.
            await b.router.snapshotReceived(staleBytes, from: a.deviceID, isReply: false)
            #expect(try await b.router.latestSnapshot(featureID: "demo", peer: a.id, sessionID: session)
                .map { try SessionWireCodec.decodeSnapshot($0.encoded).metadata.payloadType } == DeliveryRouter.sessionClosedPayloadType)
            await bed.shutdown()
        }

        @Test func watermarksAreForwardedAndMonotonic() async throws {
            let bed = DeliveryTestBed()
            defer { Task { await bed.shutdown() } }
            let (a, b) = try await bed.pair()
            let sinkA = CollectingSink()
            _ = await a.router.attach(features: ["demo"], sink: sinkA)
            for sequence: UInt64 in [3, 9, 4] {
                try await b.router.setWatermark(sessionID: RouterFixtures.session, featureID: "demo", peer: a.id, sequence: sequence)
            }
            // A last mark: one forwarded for 4 would have come before it.
            try await b.router.setWatermark(sessionID: RouterFixtures.session, featureID: "demo", peer: a.id, sequence: 10)
            try await waitUntil("watermark 10 at alice", timeout: 5) {
                sinkA.all.contains { if case .watermark(_, _, _, 10) = $0 { true } else { false } }
            }
            let marks = sinkA.all.compactMap { if case .watermark(_, _, _, let s) = $0 { s } else { nil } }
            #expect(marks == [3, 9, 10])
            await bed.shutdown()
        }

        @Test func watermarksSurviveRestartsAndAreGivenToAppsThatAttachLater() async throws {
            let bed = DeliveryTestBed()
            defer { Task { await bed.shutdown() } }
            var (a, b) = try await bed.pair()
            try await b.router.setWatermark(sessionID: RouterFixtures.session, featureID: "demo", peer: a.id, sequence: 7)
            await #expect(throws: MeshError.self) {
                try await b.router.setWatermark(sessionID: RouterFixtures.session, featureID: "demo", peer: a.id, sequence: UInt64.max)
            }
            // No app was attached on alice when it arrived; one that attaches now is told.
            try await waitUntil("watermark 7 reached alice", timeout: 5) {
                await a.router.currentWatermarks(features: ["demo"], sessionID: nil).count == 1
            }
            let early = CollectingSink()
            _ = await a.router.attach(features: ["demo"], sink: early)
            try await waitUntil("watermark 7 given on attach", timeout: 5) {
                early.all.contains { if case .watermark(_, _, _, 7) = $0 { true } else { false } }
            }
            // Both daemons restart; alice still knows 7 without bob resending it, and bob still
            // knows he set 7 (a lower value set after the restart is ignored).
            let aFolder = a.running.stateDirectory, aPort = a.running.port
            let bFolder = b.running.stateDirectory, bPort = b.running.port
            await b.stop()
            await a.stop()
            a = try await bed.start(name: "alice", stateDirectory: aFolder, port: aPort)
            let late = CollectingSink()
            _ = await a.router.attach(features: ["demo"], sink: late)
            try await waitUntil("watermark 7 remembered by alice", timeout: 5) {
                late.all.contains { if case .watermark(_, _, _, 7) = $0 { true } else { false } }
            }
            b = try await bed.start(name: "bob", stateDirectory: bFolder, port: bPort)
            try await b.router.setWatermark(sessionID: RouterFixtures.session, featureID: "demo", peer: a.id, sequence: 5)
            try await b.router.setWatermark(sessionID: RouterFixtures.session, featureID: "demo", peer: a.id, sequence: 8)
            try await waitUntil("watermark 8 at alice", timeout: 10) {
                late.all.contains { if case .watermark(_, _, _, 8) = $0 { true } else { false } }
            }
            let marks = late.all.compactMap { if case .watermark(_, _, _, let s) = $0 { s } else { nil } }
            #expect(!marks.contains(5), "a lower watermark never goes out after a restart: \(marks)")
            await bed.shutdown()
        }

        @Test func queueCancelAndUnpairDropQueuedItems() async throws {
            let bed = DeliveryTestBed()
            defer { Task { await bed.shutdown() } }
            let (a, b) = try await bed.pair()
            await b.stop()
            try await waitUntil("alice sees bob down", timeout: 5) { await !a.node.isActive(b.deviceID) }
            for index in 1...3 {
                let (envelope, encoded) = try RouterFixtures.envelope("q\(index)", sequence: UInt64(index))
                _ = try await a.router.send(envelope, encoded: encoded, mode: 2, to: b.deviceID.short)
            }
            let queued = try await a.router.queue()
            #expect(queued.map(\.summary.featureID) == ["demo", "demo", "demo"] && queued.allSatisfy { $0.summary.peer == b.id })
            try await a.router.cancelQueued(id: queued[0].summary.id.rawValue)
            await #expect(throws: MeshError.self) { try await a.router.cancelQueued(id: queued[0].summary.id.rawValue) }
            #expect(try await a.router.queue().count == 2)
            try await a.node.unpair(deviceID: b.id)
            try await waitUntil("outbox of the unpaired device dropped", timeout: 5) { try await a.router.queue().isEmpty }
            await bed.shutdown()
        }
    }
}
