#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MeshLocalAPI
import SessionMesh
import SessionMeshClient
import Testing

/// The delivery modes as a user meets them: two real `meshd` on 127.0.0.1, paired by `meshctl pair`, apps
/// played by `meshctl send` / `meshctl watch --json` and by in-process `MeshClient`s.
@Suite("delivery modes between meshd processes", .serialized,
       .enabled(if: ChildProcess.executable("meshd") != nil && ChildProcess.executable("meshctl") != nil,
                "meshd/meshctl are not built (run `swift build` first)"))
struct ProcessDeliveryModeTests {
    /// The acceptance script: watch on B; reliable, realtime, ack and snapshot sends from A
    /// arrive as printed; `snapshot get` on B reads A's snapshot; A's queue drains.
    @Test func everyModeEndToEndThroughMeshctl() async throws {
        let pair = try await DaemonPair.start()
        defer { pair.stopNow() }
        let watch = try WatchProcess(pair.b, feature: "demo")
        defer { watch.stopNow() }
        let attached = try await watch.next(type: "attached", timeout: 10)
        #expect(attached["peer"] as? String == pair.idB)

        // A's side sees B's app: the feature becomes reachable (presence lease).
        let observer = try await MeshClient.connect(socketPath: pair.a.socketPath)
        defer { Task { await observer.close() } }
        let attachment = try await observer.attach(features: ["demo"], app: "observer")
        try await ProcessFixtures.awaitFeatureReachable(attachment, peer: pair.idB, feature: "demo", timeout: 8)

        let reliable = try await pair.a.meshctl(["send", "--feature", "demo", "--mode", "reliable", "--json", "hello"])
        #expect(reliable.status == 0, "\(reliable.output)")
        let hello = try await watch.next(type: "envelope", timeout: 10)
        #expect(hello["payload"] as? String == "hello")
        #expect(hello["mode"] as? String == "reliable")
        #expect(hello["from"] as? String == pair.idA)
        #expect((hello["inboxID"] as? Int ?? 0) > 0, "a reliable item comes from the inbox")
        #expect(hello["redelivery"] as? Bool == false)

        let realtime = try await pair.a.meshctl(["send", "--feature", "demo", "--mode", "realtime", "--json", "now"])
        #expect(realtime.status == 0, "\(realtime.output)")
        #expect(realtime.output.contains(#""outcome":"sent""#), "the feature is reachable, so realtime goes out as a datagram: \(realtime.output)")
        let now = try await watch.next(type: "envelope", timeout: 10)
        #expect(now["payload"] as? String == "now")
        #expect(now["mode"] as? String == "realtime")
        #expect(now["inboxID"] as? Int == 0, "a datagram delivered live has nothing to ack")

        let ack = try await pair.a.meshctl(["send", "--feature", "demo", "--mode", "ack", "--payload-type", "bin", "ok"])
        #expect(ack.status == 0, "\(ack.output)")
        let acknowledgement = try await watch.next(type: "envelope", timeout: 10)
        #expect(acknowledgement["mode"] as? String == "ack")
        #expect(acknowledgement["payloadType"] as? String == "bin")

        let snapshot = try await pair.a.meshctl(["send", "--feature", "demo", "--mode", "snapshot", "--revision", "3", #"{"page":3}"#])
        #expect(snapshot.status == 0, "\(snapshot.output)")
        let pushed = try await watch.next(type: "snapshot", timeout: 10)
        #expect(pushed["payload"] as? String == #"{"page":3}"#)
        #expect(pushed["revision"] as? Int == 3)

        let get = try await pair.b.meshctl(["snapshot", "get", "--feature", "demo", "--peer", pair.idA, "--json"])
        #expect(get.status == 0, "\(get.output)")
        let slot = try #require(try JSONSerialization.jsonObject(with: Data(get.output.utf8)) as? [String: Any])
        #expect(slot["revision"] as? Int == 3)
        #expect(slot["payload"] as? String == #"{"page":3}"#)
        #expect(slot["from"] as? String == pair.idA)

        // Binary payloads print as base64.
        let binary = try await observer.send(envelope: AnySessionSyncEnvelope(metadata: ProcessFixtures.envelope(9).metadata,
                                                                             payload: Data([0, 1, 2, 255])), mode: .reliableEventually)
        #expect(binary.outcome == .queued)
        let bytes = try await watch.next(type: "envelope", timeout: 10)
        #expect(bytes["payloadBase64"] as? String == "AAEC/w==")

        // Everything was acked by the peer daemon: A's queue drains.
        let drained = (try? await waitUntil("A's outbox drained", timeout: 5) {
            let queue = try await pair.a.meshctl(["queue", "--json"])
            return queue.status == 0 && queue.output.contains(#"{"items":[]}"#)
        }) != nil
        #expect(drained, "A's outbox is empty once B acked")
    }

    /// `meshctl send` with no daemon is exit 3; a bad mode is exit 2; `snapshot get` of nothing is
    /// exit 1 with `not-found`; `queue cancel` of an unknown id is exit 1.
    @Test func exitCodesOfTheDataCommands() async throws {
        let a = try await DaemonProcess(name: "alpha")
        defer { a.stopNow() }
        #expect(try await DaemonProcess.run("meshctl", ["--socket", a.folder + "/none.sock", "send", "--feature", "demo", "x"]).status == 3)
        #expect(try await a.meshctl(["send", "--feature", "demo", "--mode", "carrier-pigeon", "x"]).status == 2)
        #expect(try await a.meshctl(["send", "--feature", "", "x"]).status == 2)
        let missing = try await a.meshctl(["snapshot", "get", "--feature", "demo", "--json"])
        #expect(missing.status == 1)
        #expect(missing.output.contains(#""code":"not-found""#), "\(missing.output)")
        #expect(try await a.meshctl(["queue", "cancel", "987654"]).status == 1)
        let sessions = try await a.meshctl(["sessions", "--json"])
        #expect(sessions.status == 0)
        #expect(sessions.output.contains(#"{"sessions":[]}"#), "\(sessions.output)")
    }
}
