import Foundation
import MeshLocalAPI
import NIOCore
import SessionMesh
import SessionMeshClient
import Testing

/// `MeshClient`'s data calls against a scripted daemon speaking the contract.
@Suite("MeshClient data API")
struct MeshClientDataTests {
    @Test func attachDeliversTheEventsOfItsOwnRequestTypedAndEndsWithTheConnection() async throws {
        let envelope = Fixtures.envelope(sequence: 1)
        var responder = StandardResponder()
        responder.afterAttach = { id in
            [
                try! LocalAPIDataEvent.envelope(MeshEnvelopeEvent(isRedelivery: true, inboxID: 9, from: "PEERDEV-7654321",
                                                              mode: .reliableEventually, envelope: envelope)).frame(requestID: id),
                try! LocalAPIDataEvent.reachability(MeshReachabilityEvent(peer: "PEERDEV-7654321", featureID: "other", reachable: true,
                                                                      reason: .appAttached)).frame(requestID: id &+ 1000),
                try! LocalAPIDataEvent.reachability(MeshReachabilityEvent(peer: "PEERDEV-7654321", featureID: "demo", reachable: false,
                                                                      reason: .appDetached)).frame(requestID: id),
                try! LocalAPIDataEvent.eventsDropped(EventsDroppedEvent(dropped: 3)).frame(requestID: 0),
                LocalAPIFrame(kind: .event, operation: .anchorEvent, requestID: id, body: ByteBuffer(string: "{")),
            ]
        }
        let daemon = try await FakeDaemon.start(responder.callAsFunction)
        defer { Task { await daemon.stop() } }
        let client = try await MeshClient.connect(socketPath: daemon.socketPath)
        let attachment = try await client.attach(features: ["demo"], app: "test")
        #expect(attachment.localDeviceID == "LOCALDEV-1234567")
        #expect(attachment.peers.map(\.deviceID) == ["PEERDEV-7654321"])
        var events: [MeshClientEvent] = []
        for await event in attachment.events {
            events.append(event)
            if events.count == 4 { daemon.dropConnections() }
        }
        #expect(events.count == 4)
        #expect(events.first == .envelope(MeshEnvelopeEvent(isRedelivery: true, inboxID: 9, from: "PEERDEV-7654321",
                                                        mode: .reliableEventually, envelope: envelope)))
        #expect(events.dropFirst().first == .reachability(MeshReachabilityEvent(peer: "PEERDEV-7654321", featureID: "demo",
                                                                           reachable: false, reason: .appDetached)))
        #expect(events.dropFirst(2).first == .eventsDropped(3))
        guard case .undecodable(let operation, _) = events.last else {
            Issue.record("a malformed event was not reported as undecodable")
            return
        }
        #expect(operation == "anchor")
        await client.close()
    }

    @Test func sendCarriesModeTargetAndEnvelopeAsABinaryBody() async throws {
        let daemon = try await FakeDaemon.start(StandardResponder().callAsFunction)
        defer { Task { await daemon.stop() } }
        let client = try await MeshClient.connect(socketPath: daemon.socketPath)
        let envelope = Fixtures.envelope(sequence: 4)
        let reply = try await client.send(envelope: envelope, mode: .realtimeBestEffort, to: "PEERDEV")
        #expect(reply == MeshSendReply(eventID: envelope.metadata.eventID, outcome: .queued, peers: 1))
        let frame = try #require(daemon.requests.last)
        #expect(frame.operation == .send)
        #expect(frame.flags == .binaryBody)
        #expect(try MeshSendRequest.decode(frame.body) == MeshSendRequest(mode: .realtimeBestEffort, target: "PEERDEV", envelope: envelope))
        await client.close()
    }

    /// From the connection's own loop, a send made while nothing awaits a reply is written at
    /// once, and sends made while others are in flight share drains: either way every send gets
    /// its own reply and the daemon sees them in call order.
    @Test func sendsFromTheConnectionsLoopOneAtATimeAndConcurrentlyAllGetTheirReplies() async throws {
        let daemon = try await FakeDaemon.start(StandardResponder().callAsFunction)
        defer { Task { await daemon.stop() } }
        let client = try await MeshClient.connect(socketPath: daemon.socketPath)
        let sequential = (1...20).map { Fixtures.envelope(sequence: UInt64($0)) }
        let concurrent = (21...70).map { Fixtures.envelope(sequence: UInt64($0)) }
        try await withTaskExecutorPreference(client.taskExecutor) {
            for envelope in sequential {
                let reply = try await client.send(envelope: envelope, mode: .realtimeBestEffort)
                #expect(reply.eventID == envelope.metadata.eventID)
            }
            try await withThrowingTaskGroup(of: (UUID, UUID).self) { group in
                for envelope in concurrent {
                    group.addTask {
                        (envelope.metadata.eventID, try await client.send(envelope: envelope, mode: .realtimeBestEffort).eventID)
                    }
                }
                for try await (sent, answered) in group { #expect(sent == answered) }
            }
        }
        let seen = try daemon.requests.filter { $0.operation == .send }.map { try MeshSendRequest.decode($0.body).envelope.metadata.sequence }
        #expect(Array(seen.prefix(20)) == (1...20).map { UInt64($0) }, "sequential sends in call order")
        #expect(Set(seen.dropFirst(20)) == Set((21...70).map { UInt64($0) }))
        await client.close()
    }

    @Test func latestSnapshotIsNilWhenTheSlotIsEmptyAndTheSnapshotWhenItIsNot() async throws {
        let empty = try await FakeDaemon.start(StandardResponder().callAsFunction)
        defer { Task { await empty.stop() } }
        let client = try await MeshClient.connect(socketPath: empty.socketPath)
        #expect(try await client.latestSnapshot(featureID: "demo", peer: "PEERDEV") == nil)
        await client.close()

        let stored = MeshSnapshotLatestReply(peer: "PEERDEV-7654321", snapshot: Fixtures.snapshot(revision: 12))
        let full = try await FakeDaemon.start(StandardResponder(latest: stored).callAsFunction)
        defer { Task { await full.stop() } }
        let second = try await MeshClient.connect(socketPath: full.socketPath)
        #expect(try await second.latestSnapshot(featureID: "demo") == stored)
        await second.close()
    }

    @Test func argumentsThatCannotBeSentAreRefusedBeforeAnythingIsSent() async throws {
        let daemon = try await FakeDaemon.start(StandardResponder().callAsFunction)
        defer { Task { await daemon.stop() } }
        let client = try await MeshClient.connect(socketPath: daemon.socketPath)
        await #expect(throws: MeshClientError.self) { try await client.attach(features: []) }
        do {
            try await client.send(envelope: Fixtures.envelope(sequence: 1), mode: .reliableEventually, to: String(repeating: "x", count: 300))
            Issue.record("a 300-byte target was sent")
        } catch let error as MeshClientError {
            #expect(error.kind == .invalidArgument)
            #expect(error.message.contains("target"))
        }
        #expect(daemon.requests.isEmpty)
        #expect(try await client.ackInbox([0, 0]) == 0)
        #expect(daemon.requests.isEmpty)
        await client.close()
    }

    @Test func largeAcksAreSplitIntoRequestsTheDaemonAcceptsAndOutOfRangeIDsAreNotSent() async throws {
        let daemon = try await FakeDaemon.start(StandardResponder().callAsFunction)
        defer { Task { await daemon.stop() } }
        let client = try await MeshClient.connect(socketPath: daemon.socketPath)
        let ids = (1...UInt64(MeshInboxAckRequest.maximumIDs * 2 + 5)).map { $0 }
        #expect(try await client.ackInbox(ids) == ids.count)
        let sent = try daemon.requests.map { try LocalAPIJSON.decode(MeshInboxAckRequest.self, from: $0.body, operation: .inboxAck).ids }
        #expect(sent.map(\.count) == [MeshInboxAckRequest.maximumIDs, MeshInboxAckRequest.maximumIDs, 5])
        #expect(Array(sent.joined()) == ids)

        let before = daemon.requests.count
        await #expect(throws: MeshClientError.self) { try await client.ackInbox([UInt64.max]) }
        await #expect(throws: MeshClientError.self) { try await client.cancelQueued(id: LocalAPIItemID.maximum + 1) }
        #expect(daemon.requests.count == before)
        await client.close()
    }

    @Test func aDaemonErrorKeepsItsCodeAndMessage() async throws {
        let daemon = try await FakeDaemon.start { request in
            [.error(to: request, code: LocalAPIDataError.queueFull, message: "the outbox holds 10000 items; retry later")]
        }
        defer { Task { await daemon.stop() } }
        let client = try await MeshClient.connect(socketPath: daemon.socketPath)
        do {
            try await client.send(envelope: Fixtures.envelope(sequence: 1), mode: .reliableEventually)
            Issue.record("no error")
        } catch let error as MeshClientError {
            #expect(error.kind == .daemon)
            #expect(error.code == "queue-full")
            #expect(error.message == "the outbox holds 10000 items; retry later")
        }
        await client.close()
    }
}
