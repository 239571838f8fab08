import Foundation
import MeshDiscovery
import Testing

/// mDNS is unauthenticated, so nothing it says may close a working channel: with real `meshd`
/// daemons on lab hosts, a host C advertises B's device-ID hint at its own address and B's
/// own record is withdrawn while A's channel to B carries traffic. Host 1 is A, 2 is B, 3 is C.
@Suite("meshd on lab hosts: spoofed mDNS records", .serialized,
       .enabled(if: LabEnvironment.shouldRun, LabEnvironment.skipComment))
struct MeshdLabSpoofTests {
    let a = 1, b = 2, c = 3

    @Test("(h) C advertises B's hint at its address and B's record is withdrawn: A's channel to B stays up, traffic keeps flowing")
    func spoofedRecordNeverClosesTheChannel() async throws {
        try await MeshdLab.with(hosts: 3) { lab in
            try await lab.start(a)
            try await lab.start(b)
            try await lab.pair(inviter: a, joiner: b, byAddress: true)
            try await lab.waitActive(a, b, timeout: .seconds(5))
            // C runs a daemon of its own (it answers TCP, but holds no pair key with A).
            try await lab.start(c)
            let deviceB = try await lab.status(b).deviceID
            try await lab.waitUntil("A sees B's record", timeout: .seconds(10)) {
                try await lab.peer(a, named: "host-b")?.addresses.contains(.init(address: "198.18.0.2:47470", source: "mdns")) == true
            }
            let before = try #require(try await lab.peer(a, named: "host-b")?.lastHandshake)
            let countersBefore = try await lab.status(a).counters
            let watch = try await lab.watch(b, feature: "lab")
            defer { watch.terminate() }

            // Traffic from A to B for the whole scenario: each message must reach B's app.
            var sent: [String] = []
            func sendOne() async throws {
                let message = "m-\(sent.count + 1)"
                let result = try await lab.meshctl(a, ["send", "--feature", "lab", "--mode", "reliable", "--to", deviceB, "--json", message])
                #expect(result.status == 0, "\(result.output) \(result.errors)")
                sent.append(message)
            }
            // Every 100 ms: the channel is active on both sides and has not been re-handshaken.
            func checkChannel(_ when: String) async throws {
                let ab = try await lab.peer(a, named: "host-b"), ba = try await lab.peer(b, named: "host-a")
                #expect(ab?.channel == "active" && ba?.channel == "active", "channel active \(when)")
                #expect(ab?.lastHandshake == before, "no new handshake \(when)")
            }
            for _ in 0..<5 { try await sendOne() }

            // C: B's device-ID hint at C's address.
            let hint = DiscoveryAdvertisement.deviceIDHint(for: deviceB)
            let spoof = try ChildProcess(label: "avahi-publish on C", executable: LabEnvironment.scripts + "/exec",
                                         arguments: ["3", "avahi-publish", "-s", "host-b-spoof", "_sessionmesh._udp", "47470", "v=1", "id=\(hint)"],
                                         environment: ["MESH_LAB": lab.session.directory])
            defer {
                spoof.terminate()
            }
            try await lab.waitUntil("A sees the spoofed address for B", timeout: .seconds(15)) {
                try await lab.peer(a, named: "host-b")?.addresses.contains(.init(address: "198.18.0.3:47470", source: "mdns")) == true
            }
            try await checkChannel("after the spoofed record appeared")
            try await sendOne()

            // B's record goes (its avahi-daemon stops and says goodbye): mDNS now says B is only at C.
            let withdrawn = ContinuousClock.now
            try await lab.session.run("avahi", ["2", "stop"])
            try await lab.waitUntil("A's mDNS view of B is only the spoofed address", timeout: .seconds(10)) {
                let mdns = try await lab.peer(a, named: "host-b")?.addresses.filter { $0.source == "mdns" }.map(\.address)
                return mdns == ["198.18.0.3:47470"]
            }
            try await lab.waitUntil("A tried the spoofed address and got no authenticated answer", timeout: .seconds(10)) {
                try await lab.status(a).counters["discovery.move_probes_failed_total", default: 0] >= 1
            }
            print("lab figure: (h) A probed the spoofed address and kept the channel \(LabSession.ms(ContinuousClock.now - withdrawn)) ms "
                  + "after B's record was withdrawn")
            // Traffic keeps flowing for 3 s after the withdrawal, the channel untouched: each
            // message reaches B's app before the next is sent.
            let end = ContinuousClock.now + .seconds(3)
            while ContinuousClock.now < end {
                try await sendOne()
                let message = sent.last ?? ""
                let seen = await watch.waitForLine(timeout: .seconds(5)) {
                    MeshdLab.jsonObject($0).map { $0["type"] as? String == "envelope" && $0["payload"] as? String == message } ?? false
                }
                #expect(seen != nil, "\(message) reached B's app")
                try await checkChannel("after B's record was withdrawn")
            }
            let arrived = try await lab.waitUntil("every message reached B's app", timeout: .seconds(10)) {
                MeshdLab.envelopePayloads(watch).count >= sent.count
            }
            #expect(MeshdLab.envelopePayloads(watch) == sent, "each message once, in order")
            let countersAfter = try await lab.status(a).counters
            #expect(countersAfter["handshakes.completed"] == countersBefore["handshakes.completed"], "no new channel on A")
            #expect(countersAfter["discovery.moves_total"] == countersBefore["discovery.moves_total"])
            #expect(try await lab.peers(c).isEmpty)
            print("lab figure: (h) \(sent.count) messages A→B across the spoof and the withdrawal, all delivered "
                  + "\(LabSession.ms(arrived - withdrawn)) ms after the withdrawal began; lastHandshake unchanged")
        }
    }
}
