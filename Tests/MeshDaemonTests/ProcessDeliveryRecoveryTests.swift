#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MeshLocalAPI
import SessionMesh
import SessionMeshClient
import Testing

/// Absent peers, restarts, pre-activation buffering and latest-state slots across processes.
@Suite("delivery across restarts between meshd processes", .serialized,
       .enabled(if: ChildProcess.executable("meshd") != nil && ChildProcess.executable("meshctl") != nil,
                "meshd/meshctl are not built (run `swift build` first)"))
struct ProcessDeliveryRecoveryTests {
    /// B is down; A queues 20 reliable items, is itself killed and restarted; B starts: the
    /// app on B gets each item exactly once, in order, and A's queue drains.
    @Test func reliableItemsSentWhileThePeerIsDownArriveOnceAfterItStarts() async throws {
        let pair = try await DaemonPair.start()
        defer { pair.stopNow() }
        try await pair.b.kill9()

        let client = try await MeshClient.connect(socketPath: pair.a.socketPath)
        for sequence in 1...20 {
            let reply = try await client.send(envelope: ProcessFixtures.envelope(UInt64(sequence)), mode: .reliableEventually)
            #expect(reply.outcome == .queued)
        }
        await client.close()
        let queued = try await pair.a.meshctl(["queue", "--json"])
        let items = try #require((try JSONSerialization.jsonObject(with: Data(queued.output.utf8)) as? [String: Any])?["items"] as? [[String: Any]])
        #expect(items.count == 20)
        #expect(items.allSatisfy { $0["peer"] as? String == pair.idB && $0["featureID"] as? String == "demo" })
        let human = try await pair.a.meshctl(["queue"])
        #expect(human.output.hasPrefix("ID"), "\(human.output)")

        try await pair.a.kill9()
        try await pair.a.restart()
        try await pair.b.restart()
        let watch = try WatchProcess(pair.b, feature: "demo")
        defer { watch.stopNow() }
        let envelopes = try await watch.envelopes(20, timeout: 20)
        #expect(envelopes.compactMap { $0["sequence"] as? Int } == Array(1...20))
        #expect(envelopes.allSatisfy { $0["redelivery"] as? Bool == false })
        let extra = try? await watch.next(type: "envelope", timeout: 1.5)
        #expect(extra == nil, "no item arrives twice")
    }

    /// 300 realtime sends before the channel's first activation: the last 200 arrive in order,
    /// 100 are counted dropped (`pending.dropped` in `meshctl status`); three snapshots published
    /// meanwhile collapse into the newest.
    @Test func preActivationBufferKeepsTheNewest200InOrderAndCollapsesSnapshots() async throws {
        let pair = try await DaemonPair.start()
        defer { pair.stopNow() }
        try await pair.b.kill9()
        try await pair.a.kill9()
        try await pair.a.restart()

        let client = try await MeshClient.connect(socketPath: pair.a.socketPath)
        for sequence in 1...300 {
            let reply = try await client.send(envelope: ProcessFixtures.envelope(UInt64(sequence)), mode: .realtimeBestEffort)
            #expect(reply.outcome == .pending)
        }
        for revision in [10, 30, 20] as [UInt64] {
            try await client.publishSnapshot(ProcessFixtures.snapshot(revision: revision, state: "rev \(revision)"))
        }
        await client.close()
        let counters = try #require(try await pair.a.status()["counters"] as? [String: Any])
        #expect(counters["pending.dropped"] as? Int == 100)

        try await pair.b.restart()
        let watch = try WatchProcess(pair.b, feature: "demo")
        defer { watch.stopNow() }
        let envelopes = try await watch.envelopes(200, timeout: 20)
        #expect(envelopes.compactMap { $0["sequence"] as? Int } == Array(101...300))
        var revision = 0
        try? await waitUntil("B's slot holds revision 30", timeout: 5) {
            let get = try await pair.b.meshctl(["snapshot", "get", "--feature", "demo", "--peer", pair.idA, "--json"])
            revision = (try? JSONSerialization.jsonObject(with: Data(get.output.utf8)) as? [String: Any])?["revision"] as? Int ?? 0
            return revision == 30
        }
        #expect(revision == 30, "the newest snapshot revision wins")
    }

    /// A's snapshot stays readable on B while A is down and after B restarts; a lower revision
    /// published later is not stored and does not replace it.
    @Test func latestSnapshotIsReadableWhileThePeerIsDownAndStaleRevisionsAreIgnored() async throws {
        let pair = try await DaemonPair.start()
        defer { pair.stopNow() }
        let client = try await MeshClient.connect(socketPath: pair.a.socketPath)
        let stored = try await client.publishSnapshot(ProcessFixtures.snapshot(revision: 10, state: "ten"))
        #expect(stored == MeshSnapshotPublishReply(revision: 10, stored: true))
        let reader = try await MeshClient.connect(socketPath: pair.b.socketPath)
        let latest = try? await eventually("A's snapshot on B", timeout: 5) {
            try await reader.latestSnapshot(featureID: "demo", peer: pair.idA)
        }
        #expect(latest?.snapshot.revision == 10)
        await reader.close()
        await client.close()

        try await pair.a.kill9()
        try await pair.b.kill9()
        try await pair.b.restart()
        let get = try await pair.b.meshctl(["snapshot", "get", "--feature", "demo", "--peer", pair.idA])
        #expect(get.status == 0, "\(get.output)")
        #expect(get.output.contains("ten"))
        #expect(get.output.contains("revision  10"), "\(get.output)")

        try await pair.a.restart()
        try await pair.a.waitForChannel(pair.idB, timeout: 5)
        let late = try await MeshClient.connect(socketPath: pair.a.socketPath)
        let stale = try await late.publishSnapshot(ProcessFixtures.snapshot(revision: 5, state: "five"))
        #expect(stale == MeshSnapshotPublishReply(revision: 10, stored: false), "the reply names the revision the slot keeps")
        // A reliable item after it, acknowledged by B: anything A sent before it has reached B.
        _ = try await late.send(envelope: ProcessFixtures.envelope(1), mode: .reliableEventually, to: pair.idB)
        try await waitUntil("B acknowledged A's item", timeout: 5) { try await late.queue().isEmpty }
        await late.close()
        let after = try await pair.b.meshctl(["snapshot", "get", "--feature", "demo", "--peer", pair.idA, "--json"])
        #expect(after.output.contains(#""revision":10"#), "\(after.output)")
    }
}
