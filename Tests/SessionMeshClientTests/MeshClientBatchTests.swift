import Foundation
import MeshLocalAPI
import NIOCore
import SessionMesh
import SessionMeshClient
import Testing

/// `MeshClient.send(envelopes:mode:to:)` against a scripted daemon: the frames on the wire, the
/// order of the results, and per-envelope errors.
@Suite("MeshClient batch send")
struct MeshClientBatchTests {
    /// Answers `send` with `queued`, or with `queue-full` for envelopes whose sequence is even.
    static func queueFullForEvenSequences(_ request: LocalAPIFrame) -> [LocalAPIFrame] {
        guard request.operation == .send, let send = try? MeshSendRequest.decode(request.body) else {
            return StandardResponder()(request)
        }
        if send.envelope.metadata.sequence % 2 == 0 {
            return [.error(to: request, code: LocalAPIDataError.queueFull, message: "outbox full at \(send.envelope.metadata.sequence)")]
        }
        return [.reply(to: request, MeshSendReply(eventID: send.envelope.metadata.eventID, outcome: .queued, peers: 1))]
    }

    @Test func aBatchWritesTheFramesOfSingleSendsAndReportsEachOutcomeInOrder() async throws {
        let daemon = try await FakeDaemon.start(Self.queueFullForEvenSequences)
        defer { Task { await daemon.stop() } }
        let client = try await MeshClient.connect(socketPath: daemon.socketPath)
        let envelopes = (1...5).map { Fixtures.envelope(sequence: UInt64($0)) }
        let results = try await client.send(envelopes: envelopes, mode: .reliableEventually, to: "PEERDEV")

        #expect(results.count == 5)
        for (index, result) in results.enumerated() {
            switch result {
            case .success(let reply):
                #expect(index % 2 == 0)
                #expect(reply == MeshSendReply(eventID: envelopes[index].metadata.eventID, outcome: .queued, peers: 1))
            case .failure(let error):
                #expect(index % 2 == 1)
                #expect(error.kind == .daemon)
                #expect(error.code == "queue-full")
                #expect(error.message == "outbox full at \(index + 1)")
            }
        }
        let frames = daemon.requests
        #expect(frames.map(\.operation) == Array(repeating: .send, count: 5))
        #expect(frames.allSatisfy { $0.kind == .request && $0.flags == .binaryBody })
        #expect(Set(frames.map(\.requestID)).count == 5)
        #expect(try frames.map { try MeshSendRequest.decode($0.body) }
                == envelopes.map { MeshSendRequest(mode: .reliableEventually, target: "PEERDEV", envelope: $0) })

        // The same envelope sent alone has the same body.
        _ = try await client.send(envelope: envelopes[0], mode: .reliableEventually, to: "PEERDEV")
        #expect(daemon.requests.last?.body == frames.first?.body)
        await client.close()
    }

    @Test func answersInAnyOrderGoToTheirEnvelopes() async throws {
        let held = Locked<[LocalAPIFrame]>([])
        // Holds the answers until the fourth request, then answers all four, last first.
        let daemon = try await FakeDaemon.start { request in
            guard request.operation == .send else { return StandardResponder()(request) }
            let answers = held.withLock {
                $0 += StandardResponder()(request)
                return $0
            }
            return answers.count == 4 ? answers.reversed() : []
        }
        defer { Task { await daemon.stop() } }
        let client = try await MeshClient.connect(socketPath: daemon.socketPath)
        let envelopes = (1...4).map { Fixtures.envelope(sequence: UInt64($0)) }
        let results = try await client.send(envelopes: envelopes, mode: .realtimeBestEffort)
        #expect(try results.map { try $0.get().eventID } == envelopes.map(\.metadata.eventID))
        await client.close()
    }

    @Test func whenTheConnectionEndsMidBatchTheAnswersThatCameAreKept() async throws {
        // Answers the first two sends only.
        let daemon = try await FakeDaemon.start { request in
            guard request.operation == .send, let send = try? MeshSendRequest.decode(request.body) else { return StandardResponder()(request) }
            return send.envelope.metadata.sequence <= 2 ? StandardResponder()(request) : []
        }
        defer { Task { await daemon.stop() } }
        let client = try await MeshClient.connect(socketPath: daemon.socketPath)
        let envelopes = (1...5).map { Fixtures.envelope(sequence: UInt64($0)) }
        async let sent = client.send(envelopes: envelopes, mode: .reliableEventually)
        #expect(await eventually { daemon.requests.count == 5 })
        daemon.dropConnections()
        let results = try await sent
        #expect(try results.prefix(2).map { try $0.get().eventID } == envelopes.prefix(2).map(\.metadata.eventID))
        for result in results.dropFirst(2) {
            guard case .failure(let error) = result else {
                Issue.record("an unanswered envelope was reported as sent")
                continue
            }
            #expect(error.kind == .connectionClosed)
        }
        // Later calls fail as closed, single or batched.
        let later = try await client.send(envelopes: [envelopes[0]], mode: .reliableEventually)
        #expect(later.count == 1)
        #expect((try? later[0].get()) == nil)
    }

    @Test func anEnvelopeThatCannotBeSentRefusesTheBatchBeforeAnythingIsWritten() async throws {
        let daemon = try await FakeDaemon.start(StandardResponder().callAsFunction)
        defer { Task { await daemon.stop() } }
        let client = try await MeshClient.connect(socketPath: daemon.socketPath)
        var bad = Fixtures.envelope(sequence: 2)
        bad.metadata.payloadType = String(repeating: "t", count: 2_000)
        do {
            _ = try await client.send(envelopes: [Fixtures.envelope(sequence: 1), bad, Fixtures.envelope(sequence: 3)],
                                      mode: .realtimeBestEffort)
            Issue.record("an envelope the codec refuses was sent")
        } catch let error as MeshClientError {
            #expect(error.kind == .invalidArgument)
            #expect(error.message.contains("envelope 1 of the batch"))
        }
        #expect(try await client.send(envelopes: [], mode: .realtimeBestEffort).isEmpty)
        #expect(daemon.requests.isEmpty)
        await client.close()
    }

    @Test func aLongBatchGoesInPartsWrittenInOrderWithResultsInOrder() async throws {
        let daemon = try await FakeDaemon.start(StandardResponder().callAsFunction)
        defer { Task { await daemon.stop() } }
        let client = try await MeshClient.connect(socketPath: daemon.socketPath)
        let count = MeshClient.maximumBatchWrite * 2 + 7
        let envelopes = (1...count).map { Fixtures.envelope(sequence: UInt64($0)) }
        let results = try await client.send(envelopes: envelopes, mode: .realtimeBestEffort)
        #expect(try results.map { try $0.get().eventID } == envelopes.map(\.metadata.eventID))
        #expect(try daemon.requests.map { try MeshSendRequest.decode($0.body).envelope.metadata.sequence } == (1...count).map(UInt64.init))
        await client.close()
    }
}
