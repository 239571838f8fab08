import Foundation
import MeshLocalAPI
import NIOCore
import SessionMesh
@testable import SessionMeshClient
import Testing

/// `DaemonSessionSyncTransport.stop()` while the transport's own work runs: its reconnect
/// backoff (on a manual clock: no real time passes) and its event pump held up by a reader that
/// does not read. Once `stop()` returns nothing of the transport runs or is delivered.
@Suite("DaemonSessionSyncTransport stop")
struct DaemonTransportStopTests {
    static let me = SessionPeer(id: "app-a", deviceClass: .desktop, appInstanceID: "1")

    @Test func stoppingDuringTheReconnectBackoffCancelsTheWaitAndNothingReconnects() async throws {
        let daemon = try await FakeDaemon.start(StandardResponder().callAsFunction)
        defer { Task { await daemon.stop() } }
        let clock = ManualClock()
        let transport = DaemonSessionSyncTransport(socketPath: daemon.socketPath, localPeer: Self.me, features: ["demo"],
                                                   reconnect: DaemonReconnectPolicy(initialDelay: 1, maximumDelay: 1),
                                                   clock: clock)
        try await transport.start()
        daemon.dropConnections()
        // The pump saw the connection end and its reconnect loop waits out the backoff.
        await clock.sleepers(atLeast: 1)
        #expect(!transport.isAttached)
        #expect(transport.runningTaskCount == 1, "the pump task, now in its reconnect loop")

        await transport.stop()
        #expect(clock.sleeperCount == 0, "stop cancelled the backoff wait")
        #expect(transport.runningTaskCount == 0, "stop awaited the reconnect loop's end")
        // Past every backoff: nothing is left to wake, so no reconnect is attempted.
        clock.advance(by: .seconds(60))
        #expect(clock.sleeperCount == 0)
        #expect(daemon.requests.filter { $0.operation == .attach }.count == 1, "no attach after stop")
        #expect(!transport.isAttached)
        let late = await transport.receiveEnvelopes().first { _ in true }
        #expect(late == nil, "a stream asked for after stop is already finished")
    }

    @Test func stoppingWhileThePumpWaitsForAReaderEndsItAndDeliversNothingAfter() async throws {
        let capacity = 4, pushed = 20
        var responder = StandardResponder()
        responder.afterAttach = { attachID in
            (1...pushed).compactMap { index in
                try? LocalAPIDataEvent.envelope(MeshEnvelopeEvent(inboxID: UInt64(index), from: "PEERDEV-7654321", mode: .reliableEventually,
                                                                  envelope: Fixtures.envelope(sequence: UInt64(index))))
                    .frame(requestID: attachID)
            }
        }
        let daemon = try await FakeDaemon.start(responder.callAsFunction)
        defer { Task { await daemon.stop() } }
        let clock = ManualClock()
        let transport = DaemonSessionSyncTransport(socketPath: daemon.socketPath, localPeer: Self.me, features: ["demo"],
                                                   eventBufferLimits: MeshEventBufferLimits(capacity: capacity, lowWatermark: 1),
                                                   clock: clock)
        // A subscriber that does not read: the pump fills its stream, then waits for room.
        let unread = transport.receiveEnvelopes()
        try await transport.start()
        #expect(await eventually { transport.envelopes.bufferedCounts.subscribers == [capacity] })
        #expect(transport.runningTaskCount >= 1, "the pump still runs, waiting for room")

        await transport.stop()
        #expect(transport.runningTaskCount == 0, "stop awaited the pump (and the ack flusher)")
        #expect(clock.sleeperCount == 0, "no reconnect after stop")
        // What the stream held when stop began, and nothing after: it ends there.
        var sequences: [UInt64] = []
        for await envelope in unread { sequences.append(envelope.metadata.sequence) }
        #expect(sequences == Array(1...UInt64(capacity)), "the pump delivered nothing more once stop returned")
        #expect(daemon.requests.filter { $0.operation == .attach }.count == 1)
    }
}
