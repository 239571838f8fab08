#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MeshLocalAPI
import SessionMesh
import SessionMeshClient
import Testing

/// `DaemonSessionSyncTransport` (the seed's transport protocol) over two real `meshd`.
@Suite("DaemonSessionSyncTransport between meshd processes", .serialized,
       .enabled(if: ChildProcess.executable("meshd") != nil && ChildProcess.executable("meshctl") != nil,
                "meshd/meshctl are not built (run `swift build` first)"))
struct ProcessDeliveryTransportTests {
    /// Sends made before `start()` are buffered and delivered after it; a reliable envelope and
    /// a snapshot cross; `latestPeerSnapshot` answers synchronously, also after the peer daemon
    /// died and a fresh transport primed its cache from the daemon's slot.
    @Test func theTransportCarriesEnvelopesAndSnapshotsAndRemembersTheLatest() async throws {
        let pair = try await DaemonPair.start()
        defer { pair.stopNow() }
        let me = SessionPeer(id: "app-on-a", deviceClass: .desktop, appInstanceID: "1")
        let you = SessionPeer(id: "app-on-b", deviceClass: .desktop, appInstanceID: "2")
        let receiver = DaemonSessionSyncTransport(socketPath: pair.b.socketPath, localPeer: you, features: ["demo"])
        try await receiver.start()
        let envelopes = receiver.receiveEnvelopes()
        let snapshots = receiver.receiveSnapshots()

        let sender = DaemonSessionSyncTransport(socketPath: pair.a.socketPath, localPeer: me, features: ["demo"])
        // Realtime before start waits in the pre-attach buffer (it reaches B through the
        // fallback queue or live); reliable would wait for the attach instead.
        try await sender.send(ProcessFixtures.envelope(1, payload: "before start"), mode: .realtimeBestEffort, to: nil)
        try await sender.start()
        try await sender.send(ProcessFixtures.envelope(2, payload: "after start"), mode: .reliableEventually, to: nil)
        try await sender.sendSnapshot(ProcessFixtures.snapshot(revision: 7, state: "seven"), mode: .latestSnapshot, to: nil)

        let received = try await withDeadline(15) { () -> [String] in
            var payloads: [String] = []
            for await envelope in envelopes {
                payloads.append(String(decoding: envelope.payload, as: UTF8.self))
                if payloads.count == 2 { break }
            }
            return payloads
        }
        #expect(Set(received ?? []) == ["before start", "after start"], "the send buffered before start() arrives too")
        let snapshot = try await withDeadline(15) { () -> AnySessionSyncSnapshot? in
            for await snapshot in snapshots { return snapshot }
            return nil
        }
        #expect(snapshot??.revision == 7)
        #expect(receiver.latestPeerSnapshot(featureID: "demo")?.revision == 7)
        #expect(receiver.localDeviceID == pair.idB)
        await sender.stop()
        await receiver.stop()

        try await pair.a.kill9()
        let fresh = DaemonSessionSyncTransport(socketPath: pair.b.socketPath, localPeer: you, features: ["demo"])
        #expect(fresh.latestPeerSnapshot(featureID: "demo") == nil)
        try await fresh.start()
        #expect(fresh.latestPeerSnapshot(featureID: "demo")?.state == Data("seven".utf8), "primed from B's slot while A is down")
        await fresh.stop()
    }

    /// The receiving daemon is killed and restarted: the app's transport re-attaches by itself
    /// and gets the reliable envelope sent while its daemon was down.
    @Test func theTransportComesBackAfterItsDaemonRestarts() async throws {
        let pair = try await DaemonPair.start()
        defer { pair.stopNow() }
        let me = SessionPeer(id: "app-on-a", deviceClass: .desktop, appInstanceID: "1")
        let you = SessionPeer(id: "app-on-b", deviceClass: .desktop, appInstanceID: "2")
        let receiver = DaemonSessionSyncTransport(socketPath: pair.b.socketPath, localPeer: you, features: ["demo"],
                                                  reconnect: DaemonReconnectPolicy(initialDelay: 0.1, maximumDelay: 0.5))
        try await receiver.start()
        let envelopes = receiver.receiveEnvelopes()
        let sender = DaemonSessionSyncTransport(socketPath: pair.a.socketPath, localPeer: me, features: ["demo"])
        try await sender.start()

        try await pair.b.kill9()
        #expect(await pollUntil(5) { !receiver.isAttached }, "the transport notices its daemon died")
        try await sender.send(ProcessFixtures.envelope(1, payload: "while B was down"), mode: .reliableEventually, to: nil)
        try await pair.b.restart()
        #expect(await pollUntil(15) { receiver.isAttached }, "re-attached without the app calling start()")
        let received = try await withDeadline(20) { () -> String? in
            for await envelope in envelopes { return String(decoding: envelope.payload, as: UTF8.self) }
            return nil
        }
        #expect(received == "while B was down")
        await sender.stop()
        await receiver.stop()
    }

    private func pollUntil(_ seconds: Double, _ condition: () -> Bool) async -> Bool {
        (try? await waitUntil("the transport's state", timeout: seconds) { condition() }) != nil
    }
}
