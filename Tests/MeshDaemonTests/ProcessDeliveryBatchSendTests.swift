#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MeshLocalAPI
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
}
