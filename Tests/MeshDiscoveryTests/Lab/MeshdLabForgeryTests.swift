import Foundation
import MeshDiscovery
import Testing

/// Forged mDNS and replayed handshakes against real `meshd` daemons on lab hosts. Host 1 is A,
/// 2 is B (paired with A), 3 is C (the attacker, `scripts/lab/forge`), 4 is D (a new device).
/// C advertises B's device-ID hint on 16 addresses of its own, so A dials them and C captures
/// A's genuine message 1s to B; C holds 4 idle connections to B from each of the 16 addresses
/// and replays the captured message 1s to B from 3 of them. B restarts: its channel to A must
/// come back about as fast as without the attack, and D must still pair with A by code alone
/// while C also advertises A's pairing hint under names that sort first.
@Suite("meshd on lab hosts: forged mDNS and replayed handshakes", .serialized,
       .enabled(if: LabEnvironment.shouldRun, LabEnvironment.skipComment))
struct MeshdLabForgeryTests {
    let a = 1, b = 2, c = 3, d = 4
    static let forgedAddresses = (101 ... 116).map { "198.18.0.\($0)" }

    @Test("(i) 16 forged addresses with B's hint and replays from 3 sources: B's channel comes back after a restart, D pairs by code")
    func forgedAdvertiserAndReplaysDoNotKeepThePeerOrPairingOut() async throws {
        try await MeshdLab.with(hosts: 4) { lab in
            try await lab.start(a)
            try await lab.start(b)
            try await lab.pair(inviter: a, joiner: b, byAddress: true)
            try await lab.waitActive(a, b, timeout: .seconds(5))

            // The usual time: B restarts without an attack.
            await lab.stop(b)
            let baselineStart = ContinuousClock.now
            try await lab.start(b)
            let baselineUp = try await lab.waitActive(a, b, timeout: .seconds(20))
            let baseline = baselineUp - baselineStart
            print("lab figure: (i) B's channel back \(LabSession.ms(baseline)) ms after its restart, no attack")

            // C: 16 addresses, B's hint on each, captures, slot holders.
            for address in Self.forgedAddresses {
                _ = try await ChildProcess.run("/usr/sbin/ip", ["-n", lab.session.name + "h\(c)", "addr", "add", address + "/24", "dev", "eth0"])
            }
            let deviceB = try await lab.status(b).deviceID
            let forge = try ChildProcess(label: "forge on C", executable: LabEnvironment.scripts + "/exec",
                                         arguments: ["\(c)", "python3", LabEnvironment.scripts + "/forge",
                                                     "--hint", DiscoveryAdvertisement.deviceIDHint(for: deviceB),
                                                     "--target", MeshdLab.address(b),
                                                     "--addresses", Self.forgedAddresses.joined(separator: ","),
                                                     "--replay-sources", "3", "--max-seconds", "90"],
                                         environment: ["MESH_LAB": lab.session.directory])
            defer { forge.closeInput(); forge.terminate() }
            let forged = Set(Self.forgedAddresses.map { $0 + ":\(MeshdLab.port)" })
            try await lab.waitUntil("A sees B's hint on forged addresses", timeout: .seconds(15)) {
                let mdns = try await lab.peer(a, named: "host-b")?.addresses.filter { $0.source == "mdns" } ?? []
                return mdns.filter { forged.contains($0.address) }.count >= 4
            }
            // B goes down: A dials every address B's hint is shown at, C's too, and C keeps
            // the message 1s it gets.
            await lab.stop(b)
            guard await forge.waitForLine(timeout: .seconds(15), where: { $0.hasPrefix("CAPTURED") }) != nil else {
                throw LabError("C captured no message 1 from A: \(forge.errorOutput.suffix(2000))")
            }
            forge.send("REPLAY")
            guard await forge.waitForLine(timeout: .seconds(5), where: { $0.hasPrefix("REPLAYING") }) != nil else {
                throw LabError("the forge did not start replaying")
            }
            let attackedStart = ContinuousClock.now
            try await lab.start(b)
            let attackedUp = try await lab.waitActive(a, b, timeout: .seconds(30))
            let attacked = attackedUp - attackedStart
            print("lab figure: (i) B's channel back \(LabSession.ms(attacked)) ms after its restart under attack "
                  + "(baseline \(LabSession.ms(baseline)) ms)")
            #expect(attacked < baseline + .seconds(5), "the attack delayed the reconnect")

            // Keep the attack running with the channel up until B has refused more of it, then
            // look at B.
            func refusals() async throws -> UInt64 {
                let counters = try await lab.status(b).counters
                return ["handshakes.refused.seen", "handshakes.refused.replay", "handshakes.refused.peer_busy"]
                    .reduce(0) { $0 + (counters[$1] ?? 0) }
            }
            let refusedBefore = try await refusals()
            _ = try await lab.waitUntil("B refuses more of the attack while A's channel to B stays up", timeout: .seconds(15)) {
                let ab = try await lab.peer(a, named: "host-b")
                #expect(ab?.channel == "active", "A's channel to B stays up under the attack")
                return try await refusals() > refusedBefore + 10
            }

            // D pairs with A by code alone, while C advertises A's pairing hint twice under
            // names that sort first (it closes every pairing connection).
            try await lab.start(d)
            let (code, waiting) = try await lab.showCode(a)
            defer { waiting.terminate() }
            let hint = String(code.prefix(2))
            forge.send("PAIRHINT \(hint)")
            try await lab.waitUntil("D sees A's hint and the two forged ones", timeout: .seconds(15)) {
                let browse = try await ChildProcess.run(LabEnvironment.scripts + "/exec", ["\(d)", "avahi-browse", "-rpt", "_sessionmesh._udp"],
                                                        environment: ["MESH_LAB": lab.session.directory], timeout: .seconds(10))
                let lines = browse.output.split(separator: "\n").filter { $0.hasPrefix("=") && $0.contains("pair=\(hint)") }
                return Set(lines.compactMap { $0.split(separator: ";").dropFirst(3).first }).count >= 3
            }
            let pairingStart = ContinuousClock.now
            let joined = try await lab.meshctl(d, ["pair", code, "--json"], timeout: .seconds(60))
            let pairingTime = ContinuousClock.now - pairingStart
            #expect(joined.status == 0, "D paired by code: \(joined.output) \(joined.errors)")
            #expect(await waiting.waitForExit(timeout: .seconds(10)) == 0, "A's pair reported the new device")
            print("lab figure: (i) D paired with A by code alone in \(LabSession.ms(pairingTime)) ms with 2 forged inviters sorting first")

            forge.closeInput()
            let stats = await forge.waitForLine(timeout: .seconds(15), where: { $0.hasPrefix("STATS") })?.line.text ?? "STATS (none)"
            let counters = try await lab.status(b).counters
            let keys = ["handshakes.refused.seen", "handshakes.refused.replay", "handshakes.refused.peer_busy", "handshakes.refused.busy",
                        "handshakes.completed", "connections.evicted", "connections.over_cap", "connections.over_source_cap",
                        "connections.rate_limited", "connections.timed_out"]
            print("lab figure: (i) forge \(stats)")
            print("lab figure: (i) B after the attack: " + keys.map { "\($0)=\(counters[$0, default: 0])" }.joined(separator: " "))
            #expect(stats.contains("replays_sent="), "the forge reported")
            #expect(counters["handshakes.refused.seen", default: 0] > 0, "copies of captured message 1s were refused as seen")
            let sent = stats.split(separator: " ").first { $0.hasPrefix("replays_sent=") }.flatMap { UInt64($0.dropFirst(13)) } ?? 0
            let answered = stats.split(separator: " ").first { $0.hasPrefix("replays_answered=") }.flatMap { UInt64($0.dropFirst(17)) } ?? 0
            let capturedCount = stats.split(separator: " ").first { $0.hasPrefix("captured=") }.flatMap { UInt64($0.dropFirst(9)) } ?? 0
            #expect(sent > 0)
            #expect(answered <= capturedCount, "each captured message 1 was answered at most once (after B's restart)")
        }
    }
}
