import Foundation
import MeshLocalAPI
import NIOCore
import SessionMesh
@testable import SessionMeshClient
import Testing

/// `DaemonSessionSyncTransport` against a scripted daemon: pre-attach buffering, reliable sends
/// waiting for the attach, the latest-snapshot cache, acks, multicast streams.
@Suite("DaemonSessionSyncTransport")
struct DaemonTransportTests {
    static let me = SessionPeer(id: "app-a", deviceClass: .desktop, appInstanceID: "1")
    static let peer = SessionPeer(id: "PEERDEV-7654321", deviceClass: .unknown, appInstanceID: "x")

    @Test func sendsBeforeTheAttachAreBufferedCappedCollapsedAndDrainedInArrivalOrder() async throws {
        let daemon = try await FakeDaemon.start(StandardResponder().callAsFunction)
        defer { Task { await daemon.stop() } }
        let transport = DaemonSessionSyncTransport(socketPath: daemon.socketPath, localPeer: Self.me, features: ["demo"])
        for sequence in 1...300 {
            try await transport.send(Fixtures.envelope(sequence: UInt64(sequence)), mode: .realtimeBestEffort, to: nil)
            if sequence == 150 { try await transport.sendSnapshot(Fixtures.snapshot(revision: 1), mode: .latestSnapshot, to: nil) }
        }
        try await transport.sendSnapshot(Fixtures.snapshot(revision: 2), mode: .latestSnapshot, to: nil)
        #expect(transport.droppedBeforeAttachCount == 100)
        #expect(daemon.requests.isEmpty)

        try await transport.start()
        let data = daemon.requests.filter { $0.operation == .send || $0.operation == .snapshotPublish }
        #expect(data.count == 201)
        let sequences = try data.dropLast().map { try MeshSendRequest.decode($0.body).envelope.metadata.sequence }
        #expect(sequences == Array(101...300))
        let last = try #require(data.last)
        #expect(try MeshSnapshotPublishRequest.decode(last.body).snapshot.revision == 2)

        // Once attached, sends go straight through.
        try await transport.send(Fixtures.envelope(sequence: 301), mode: .realtimeBestEffort, to: Self.peer)
        let direct = try MeshSendRequest.decode(try #require(daemon.requests.last).body)
        #expect(direct.envelope.metadata.sequence == 301)
        #expect(direct.target == Self.peer.id)
        await transport.stop()
    }

    @Test func reliableSendsWaitForTheAttachInsteadOfBeingDroppedAndFailIfStopped() async throws {
        let daemon = try await FakeDaemon.start(StandardResponder().callAsFunction)
        defer { Task { await daemon.stop() } }
        let transport = DaemonSessionSyncTransport(socketPath: daemon.socketPath, localPeer: Self.me, features: ["demo"], pendingCapacity: 1)
        let waiting = Task { try await transport.send(Fixtures.envelope(sequence: 1), mode: .reliableEventually, to: nil) }
        #expect(await eventually { transport.state.withLock { $0.waiters.count } == 1 }, "the send waits for the attach")
        #expect(daemon.requests.isEmpty)
        try await transport.start()
        try await waiting.value
        let sent = try MeshSendRequest.decode(try #require(daemon.requests.last { $0.operation == .send }).body)
        #expect(sent.mode == .reliableEventually)

        let stopped = DaemonSessionSyncTransport(socketPath: daemon.socketPath, localPeer: Self.me, features: ["demo"])
        let doomed = Task { try await stopped.send(Fixtures.envelope(sequence: 2), mode: .reliableEventually, to: nil) }
        #expect(await eventually { stopped.state.withLock { $0.waiters.count } == 1 }, "the send waits for the attach")
        await stopped.stop()
        await #expect(throws: MeshClientError.self) { try await doomed.value }
        await transport.stop()
    }

    @Test func latestPeerSnapshotIsPrimedFromTheDaemonAndNeverGoesBackInRevision() async throws {
        let stored = MeshSnapshotLatestReply(peer: Self.peer.id, snapshot: Fixtures.snapshot(revision: 5))
        let daemon = try await FakeDaemon.start(StandardResponder(latest: stored).callAsFunction)
        defer { Task { await daemon.stop() } }
        let transport = DaemonSessionSyncTransport(socketPath: daemon.socketPath, localPeer: Self.me, features: ["demo"])
        #expect(transport.latestPeerSnapshot(featureID: "demo") == nil)
        try await transport.start()
        #expect(transport.latestPeerSnapshot(featureID: "demo")?.revision == 5)
        let snapshots = transport.receiveSnapshots()

        let attachID = try #require(daemon.requests.first { $0.operation == .attach }).requestID
        daemon.push(try LocalAPIDataEvent.snapshot(MeshSnapshotEvent(from: Self.peer.id, snapshot: Fixtures.snapshot(revision: 7))).frame(requestID: attachID))
        var iterator = snapshots.makeAsyncIterator()
        #expect(await iterator.next()?.revision == 7)
        #expect(transport.latestPeerSnapshot(featureID: "demo")?.revision == 7)
        daemon.push(try LocalAPIDataEvent.snapshot(MeshSnapshotEvent(from: Self.peer.id, snapshot: Fixtures.snapshot(revision: 6))).frame(requestID: attachID))
        #expect(await iterator.next()?.revision == 6)
        #expect(transport.latestPeerSnapshot(featureID: "demo")?.revision == 7)
        #expect(transport.latestPeerSnapshot(featureID: "other") == nil)
        await transport.stop()
    }

    @Test func reliableEnvelopesHeldForTheFirstStreamAreAckedOnlyOnceHandedOver() async throws {
        let daemon = try await FakeDaemon.start(StandardResponder().callAsFunction)
        defer { Task { await daemon.stop() } }
        let transport = DaemonSessionSyncTransport(socketPath: daemon.socketPath, localPeer: Self.me, features: ["demo"])
        try await transport.start()
        let attachID = try #require(daemon.requests.first { $0.operation == .attach }).requestID
        let early = Fixtures.envelope(sequence: 1)
        daemon.push(try LocalAPIDataEvent.envelope(MeshEnvelopeEvent(inboxID: 42, from: Self.peer.id, mode: .reliableEventually, envelope: early))
            .frame(requestID: attachID))
        // Wait until the transport holds it (a fixed sleep raced the push on a loaded machine).
        #expect(await eventually { transport.heldInboxCount == 1 })
        #expect(!daemon.requests.contains { $0.operation == .inboxAck })

        let first = transport.receiveEnvelopes()
        let second = transport.receiveEnvelopes()
        var firstIterator = first.makeAsyncIterator()
        #expect(await firstIterator.next() == early)
        #expect(await eventually { daemon.requests.contains { $0.operation == .inboxAck } })
        let late = Fixtures.envelope(sequence: 2)
        daemon.push(try LocalAPIDataEvent.envelope(MeshEnvelopeEvent(inboxID: 43, from: Self.peer.id, mode: .reliableEventually, envelope: late))
            .frame(requestID: attachID))
        var secondIterator = second.makeAsyncIterator()
        #expect(await firstIterator.next() == late)
        #expect(await secondIterator.next() == late)
        #expect(await eventually {
            let acked = daemon.requests.filter { $0.operation == .inboxAck }
                .compactMap { try? LocalAPIJSON.decode(MeshInboxAckRequest.self, from: $0.body, operation: .inboxAck).ids }
            return acked.flatMap { $0 }.sorted() == [42, 43]
        })

        let changes = transport.reachabilityChanges()
        daemon.push(try LocalAPIDataEvent.reachability(MeshReachabilityEvent(peer: Self.peer.id, featureID: "demo", reachable: false, reason: .leaseExpired))
            .frame(requestID: attachID))
        var changeIterator = changes.makeAsyncIterator()
        let change = await changeIterator.next()
        #expect(change?.peer.id == Self.peer.id)
        #expect(change?.isReachable == false)
        #expect(change?.reason == .leaseExpired)
        #expect(change?.featureID == "demo")
        await transport.stop()
    }

    @Test func aDroppedConnectionIsReattachedByItselfAndSendsMadeMeanwhileGoThrough() async throws {
        let daemon = try await FakeDaemon.start(StandardResponder().callAsFunction)
        defer { Task { await daemon.stop() } }
        let transport = DaemonSessionSyncTransport(socketPath: daemon.socketPath, localPeer: Self.me, features: ["demo"],
                                                   reconnect: DaemonReconnectPolicy(initialDelay: 0.2, maximumDelay: 0.5))
        try await transport.start()
        #expect(transport.isAttached)
        daemon.dropConnections()
        #expect(await eventually { !transport.isAttached }, "the transport notices the daemon went away")

        // While detached: realtime waits in the buffer, reliable waits for the attach.
        try await transport.send(Fixtures.envelope(sequence: 1), mode: .realtimeBestEffort, to: nil)
        let reliable = Task { try await transport.send(Fixtures.envelope(sequence: 2), mode: .reliableEventually, to: nil) }
        #expect(await eventually(10) { transport.isAttached }, "re-attached without the app calling start()")
        try await reliable.value
        #expect(daemon.requests.filter { $0.operation == .attach }.count == 2)
        let sequences = daemon.requests.filter { $0.operation == .send }
            .compactMap { try? MeshSendRequest.decode($0.body).envelope.metadata.sequence }
        #expect(sequences == [1, 2], "the buffered realtime send goes first, then the reliable one")
        await transport.stop()
        #expect(!transport.isAttached)
    }

    @Test func reconnectGivesUpAfterItsAttemptsAndFailsWaitingReliableSends() async throws {
        let daemon = try await FakeDaemon.start(StandardResponder().callAsFunction)
        let transport = DaemonSessionSyncTransport(socketPath: daemon.socketPath, localPeer: Self.me, features: ["demo"],
                                                   reconnect: DaemonReconnectPolicy(initialDelay: 0.3, maximumDelay: 0.3, maximumAttempts: 3))
        try await transport.start()
        await daemon.stop()
        #expect(await eventually { !transport.isAttached })
        let waiting = Task { try await transport.send(Fixtures.envelope(sequence: 1), mode: .reliableEventually, to: nil) }
        await #expect(throws: MeshClientError.self) { try await waiting.value }
        // Given up: the app may start it again (here it fails at once: no daemon).
        await #expect(throws: MeshClientError.self) { try await transport.start() }
        await transport.stop()
    }

    @Test func withoutAPolicyTheAppRestartsTheTransportItself() async throws {
        let daemon = try await FakeDaemon.start(StandardResponder().callAsFunction)
        defer { Task { await daemon.stop() } }
        let transport = DaemonSessionSyncTransport(socketPath: daemon.socketPath, localPeer: Self.me, features: ["demo"], reconnect: nil)
        try await transport.start()
        daemon.dropConnections()
        #expect(await eventually { !transport.isAttached })
        // Without a policy the transport went idle, not to `starting`: no reconnect loop runs.
        #expect(await eventually { if case .idle = transport.state.withLock({ $0.phase }) { true } else { false } })
        #expect(daemon.requests.filter { $0.operation == .attach }.count == 1, "no reconnect without a policy")
        try await transport.start()
        #expect(transport.isAttached)
        await transport.stop()
    }
}
