import Foundation
import Testing

/// The device set (docs/DEVICE-SET.md) with five real `meshd` on lab hosts, each with its own
/// avahi-daemon: devices paired with one member each reach every member, and a removal made on
/// a member that never paired with the removed device reaches everyone, offline ones included.
@Suite("the device set on lab hosts (network namespaces)", .serialized,
       .enabled(if: LabEnvironment.shouldRun, LabEnvironment.skipComment))
struct MeshdLabDeviceSetTests {
    let a = 1, b = 2, c = 3, d = 4, e = 5

    /// Whether `host` shows an active channel to every host in `others`.
    static func activeTo(_ lab: MeshdLab, _ host: Int, _ others: [Int]) async throws -> Bool {
        let peers = try await lab.peers(host)
        return others.allSatisfy { other in peers.contains { $0.name == MeshdLab.hostNames[other] && $0.channel == "active" } }
    }

    static func setStatus(_ lab: MeshdLab, _ host: Int) async throws -> [String: Any] {
        let result = try await lab.meshctl(host, ["status", "--json"], timeout: .seconds(5))
        let object = try #require(MeshdLab.jsonObject(result.output), "status of host \(host): \(result.errors)")
        return try #require(object["deviceSet"] as? [String: Any], "status carries deviceSet")
    }

    @Test("B, C and D pair with A, E with D: all ten channels within 10 s; E's item reaches A–D once each; D removed on B while D and E are off: E refuses D, D reports its removal, nothing after it reaches D")
    func fiveDevices() async throws {
        try await MeshdLab.with(hosts: 5) { lab in
            for host in [a, b, c, d, e] { try await lab.start(host) }
            var ids: [Int: String] = [:]
            for host in [a, b, c, d, e] { ids[host] = try await lab.status(host).deviceID }
            // By code alone: the joiner finds the inviter over mDNS.
            for joiner in [b, c, d] { try await lab.pair(inviter: a, joiner: joiner, byAddress: false) }
            try await lab.pair(inviter: d, joiner: e, byAddress: false)
            let paired = ContinuousClock.now
            let everyone = [a, b, c, d, e]
            let allActive = try await lab.waitUntil("all ten channels active", timeout: .seconds(10)) {
                for host in everyone where try await !Self.activeTo(lab, host, everyone.filter { $0 != host }) { return false }
                return true
            }
            print("lab figure: device set: all 10 channels active \(LabSession.ms(allActive - paired)) ms after the last pairing")
            for host in everyone { #expect(try await Self.setStatus(lab, host)["size"] as? Int == 5) }

            // A reliable item from E to every member reaches A–D once each.
            var watches: [Int: ChildProcess] = [:]
            for host in [a, b, c, d] { watches[host] = try await lab.watch(host, feature: "set") }
            let sent = try await lab.meshctl(e, ["send", "--feature", "set", "--mode", "reliable", "from-e"])
            #expect(sent.status == 0, "\(sent.output) \(sent.errors)")
            // A second item after it: once it is there, a copy of the first would have come before it.
            let marker = try await lab.meshctl(e, ["send", "--feature", "set", "--mode", "reliable", "after-from-e"])
            #expect(marker.status == 0, "\(marker.output) \(marker.errors)")
            try await lab.waitUntil("A–D each got E's items", timeout: .seconds(10)) {
                watches.values.allSatisfy { MeshdLab.envelopePayloads($0).contains("after-from-e") }
            }
            for (host, watch) in watches {
                #expect(MeshdLab.envelopePayloads(watch).filter { $0 == "from-e" }.count == 1, "host \(host) got E's item once")
            }

            // D and E stop; B, which never paired with D, removes it.
            await lab.stop(d)
            await lab.stop(e)
            let unpaired = try await lab.meshctl(b, ["unpair", try #require(ids[d])])
            #expect(unpaired.status == 0, "\(unpaired.output) \(unpaired.errors)")
            for host in [a, c] {
                try await lab.waitUntil("host \(host) forgets D", timeout: .seconds(10)) {
                    try await lab.peers(host).allSatisfy { $0.deviceID != ids[d] }
                }
            }
            // E comes back: a member tells it; it forgets D and refuses it.
            try await lab.start(e)
            try await lab.waitUntil("E forgets D", timeout: .seconds(15)) {
                let forgotten = try await lab.peers(e).allSatisfy { $0.deviceID != ids[d] }
                let size = try await Self.setStatus(lab, e)["size"] as? Int
                return forgotten && size == 4
            }
            try await lab.waitUntil("E has its channels to A, B and C", timeout: .seconds(10)) { try await Self.activeTo(lab, e, [a, b, c]) }
            // D comes back: it reports that it was removed, and gets no channel.
            try await lab.start(d)
            try await lab.waitUntil("D reports its removal", timeout: .seconds(20)) {
                try await Self.setStatus(lab, d)["removed"] as? Bool == true
            }
            let watchD = try await lab.watch(d, feature: "set")
            let after = try await lab.meshctl(a, ["send", "--feature", "set", "--mode", "reliable", "after-removal"])
            #expect(after.status == 0)
            try await lab.waitUntil("B and C get the later item", timeout: .seconds(10)) {
                [b, c].allSatisfy { MeshdLab.envelopePayloads(watches[$0]!).contains("after-removal") }
            }
            // D holds no peer at all, so nothing can reach it later either.
            #expect(try await lab.peers(d).isEmpty)
            #expect(MeshdLab.envelopePayloads(watchD).isEmpty, "nothing reaches the removed device")
            for host in [a, b, c, e] { #expect(try await lab.peers(host).allSatisfy { $0.deviceID != ids[d] }) }
            let refused = try await lab.status(e).counters["handshakes.refused.unknown_key"] ?? 0
            print("lab figure: device set: E refused \(refused) handshake(s) of unknown keys (D's among them)")
        }
    }
}
