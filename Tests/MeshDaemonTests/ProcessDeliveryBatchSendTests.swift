#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MeshLocalAPI
import NIOPosix
import SessionMesh
import SessionMeshClient
import Testing

/// `MeshClient.send(envelopes:mode:to:)` against two real `meshd`: per-envelope outcomes in
/// the order given, every envelope at the peer's app once, and per-envelope daemon errors.
@Suite("MeshClient batch send between meshd processes", .serialized,
       .enabled(if: ChildProcess.executable("meshd") != nil && ChildProcess.executable("meshctl") != nil,
                "meshd/meshctl are not built (run `swift build` first)"))
struct ProcessDeliveryBatchSendTests {
    @Test func batchesArriveOnceWithOneOutcomePerEnvelopeInOrder() async throws {
        let pair = try await DaemonPair.start()
        defer { pair.stopNow() }
        let appA = try await MeshClient.connect(socketPath: pair.a.socketPath)
        let appB = try await MeshClient.connect(socketPath: pair.b.socketPath)
        defer { Task { await appA.close(); await appB.close() } }
        let inbound = try await appB.attach(features: ["batch"], app: "receiver")
        let presence = try await appA.attach(features: ["batch"], app: "sender")
        try await ProcessFixtures.awaitFeatureReachable(presence, peer: pair.idB, feature: "batch", timeout: 8)

        let realtime = (1...64).map { ProcessFixtures.envelope(UInt64($0), feature: "batch") }
        let reliable = (65...80).map { ProcessFixtures.envelope(UInt64($0), feature: "batch") }
        let sentRealtime = try await appA.send(envelopes: realtime, mode: .realtimeBestEffort, to: pair.idB)
        let sentReliable = try await appA.send(envelopes: reliable, mode: .reliableEventually)

        for (result, envelope) in zip(sentRealtime + sentReliable, realtime + reliable) {
            let reply = try result.get()
            #expect(reply.eventID == envelope.metadata.eventID)
            #expect(reply.peers == 1)
        }
        #expect(try sentRealtime.allSatisfy { [.sent, .queued].contains(try $0.get().outcome) })
        #expect(try sentReliable.allSatisfy { try $0.get().outcome == .queued })

        // B's app gets all 80, each once (the daemon may run the requests of a batch concurrently,
        // so arrival order is not asserted); it acks what has an inbox id.
        let received = try await withDeadline(15) { () -> [MeshEnvelopeEvent] in
            var received: [MeshEnvelopeEvent] = []
            for await event in inbound.events {
                guard case .envelope(let envelope) = event else { continue }
                received.append(envelope)
                if received.count == 80 { break }
            }
            return received
        }
        let arrived = try #require(received)
        #expect(Set(arrived.map(\.envelope.metadata.eventID)) == Set((realtime + reliable).map(\.metadata.eventID)))
        #expect(arrived.count == 80)
        let queued = arrived.filter { $0.mode == .reliableEventually }.map(\.envelope.metadata.sequence)
        #expect(queued.sorted() == Array(65...80))
        #expect(arrived.filter { $0.mode == .reliableEventually }.allSatisfy { $0.inboxID != 0 })
        _ = try await appB.ackInbox(arrived.map(\.inboxID))
    }

    @Test func aDaemonErrorIsReportedForEachEnvelopeAndTheConnectionKeepsWorking() async throws {
        let pair = try await DaemonPair.start()
        defer { pair.stopNow() }
        let app = try await MeshClient.connect(socketPath: pair.a.socketPath)
        defer { Task { await app.close() } }
        let envelopes = (1...5).map { ProcessFixtures.envelope(UInt64($0), feature: "batch") }
        let results = try await app.send(envelopes: envelopes, mode: .reliableEventually, to: "NOSUCHDEVICE")
        #expect(results.count == 5)
        for result in results {
            guard case .failure(let error) = result else {
                Issue.record("a send to an unknown device succeeded")
                continue
            }
            #expect(error.kind == .daemon)
            #expect(error.code == LocalAPIDataError.unknownPeer)
        }
        // The same connection goes on: a single send and a batch to the real peer.
        #expect(try await app.send(envelope: envelopes[0], mode: .reliableEventually, to: pair.idB).outcome == .queued)
        let again = try await app.send(envelopes: Array(envelopes.dropFirst()), mode: .reliableEventually, to: pair.idB)
        #expect(try again.map { try $0.get().eventID } == envelopes.dropFirst().map(\.metadata.eventID))
    }

    /// An app that runs its code on its connection's loop (`MeshClient.taskExecutor`, the
    /// low-latency setup) sends and receives as any other: every send answered, every realtime
    /// envelope at the peer's app once, and the code really runs on an event loop thread.
    @Test func appsRunningOnTheirConnectionsLoopSendAndReceive() async throws {
        let pair = try await DaemonPair.start()
        defer { pair.stopNow() }
        let appA = try await MeshClient.connect(socketPath: pair.a.socketPath)
        let appB = try await MeshClient.connect(socketPath: pair.b.socketPath)
        defer { Task { await appA.close(); await appB.close() } }
        let inbound = try await appB.attach(features: ["loop"], app: "receiver")
        let presence = try await appA.attach(features: ["loop"], app: "sender")
        try await ProcessFixtures.awaitFeatureReachable(presence, peer: pair.idB, feature: "loop", timeout: 8)

        let receiving = Task(executorPreference: appB.taskExecutor) { () -> (ids: [UUID], offLoop: Int) in
            var ids: [UUID] = [], offLoop = 0
            for await event in inbound.events {
                if MultiThreadedEventLoopGroup.currentEventLoop == nil { offLoop += 1 }
                guard case .envelope(let envelope) = event else { continue }
                ids.append(envelope.envelope.metadata.eventID)
                if envelope.inboxID != 0 { _ = try? await appB.ackInbox([envelope.inboxID]) }
                if ids.count == 40 { break }
            }
            return (ids, offLoop)
        }
        let envelopes = (1...40).map { ProcessFixtures.envelope(UInt64($0), feature: "loop") }
        let offLoop = try await withTaskExecutorPreference(appA.taskExecutor) { () async throws -> Int in
            var offLoop = 0
            for envelope in envelopes.prefix(20) {
                let reply = try await appA.send(envelope: envelope, mode: .realtimeBestEffort, to: pair.idB)
                #expect(reply.eventID == envelope.metadata.eventID)
                if MultiThreadedEventLoopGroup.currentEventLoop == nil { offLoop += 1 }
            }
            for result in try await appA.send(envelopes: Array(envelopes.dropFirst(20)), mode: .realtimeBestEffort, to: pair.idB) {
                #expect([.sent, .queued].contains(try result.get().outcome))
            }
            if MultiThreadedEventLoopGroup.currentEventLoop == nil { offLoop += 1 }
            return offLoop
        }
        #expect(offLoop == 0)
        // On timeout the deadline cancels the wait, which cancels the receiving task (its
        // event loop then ends and the test fails instead of hanging).
        let received = try await withDeadline(15) {
            await withTaskCancellationHandler { await receiving.value } onCancel: { receiving.cancel() }
        }
        let result = try #require(received, "B's app did not get all 40 envelopes within 15 s")
        #expect(result.offLoop == 0)
        #expect(result.ids.count == 40)
        #expect(Set(result.ids) == Set(envelopes.map(\.metadata.eventID)))
    }
}
