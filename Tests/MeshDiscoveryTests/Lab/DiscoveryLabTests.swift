import Foundation
import Testing

/// Discovery between real avahi-daemons on test hosts in network namespaces (scripts/lab).
/// Each test prints its measured figures (`lab figure: …`).
@Suite("Discovery lab (network namespaces)", .serialized,
       .enabled(if: LabEnvironment.shouldRun, LabEnvironment.skipComment))
struct DiscoveryLabTests {
    @Test("A and B resolve each other with the right address within 5 s; a third host C sees both")
    func threeHostsFindEachOther() async throws {
        try await LabSession.with(hosts: 3) { lab in
            let a = try lab.probe(host: 1, name: "host-a", deviceID: "AAAA-1111-XX", port: 7001)
            let b = try lab.probe(host: 2, name: "host-b", deviceID: "BBBB-2222-XX", port: 7002)
            let c = try lab.probe(host: 3, name: "host-c", deviceID: "CCCC-3333-XX", port: 7003)
            let aSeesB = try await a.waitForResolved("host-b", timeout: .seconds(6)) {
                $0.hosts == ["198.18.0.2"] && $0.addresses?.first?.port == 7002
            }
            let bSeesA = try await b.waitForResolved("host-a", timeout: .seconds(6)) {
                $0.hosts == ["198.18.0.1"] && $0.addresses?.first?.port == 7001
            }
            let cSeesA = try await c.waitForResolved("host-a", timeout: .seconds(6)) { $0.hosts == ["198.18.0.1"] }
            let cSeesB = try await c.waitForResolved("host-b", timeout: .seconds(6)) { $0.hosts == ["198.18.0.2"] }
            print("lab figure: time to resolve from probe start: A→B \(aSeesB.event.t_ms) ms, B→A \(bSeesA.event.t_ms) ms, "
                  + "C→A \(cSeesA.event.t_ms) ms, C→B \(cSeesB.event.t_ms) ms")
            #expect(aSeesB.event.t_ms <= 5000)
            #expect(bSeesA.event.t_ms <= 5000)
            #expect(aSeesB.event.device == "BBBB2222")
            #expect(aSeesB.event.version == 1)
            #expect(aSeesB.event.addresses?.first?.interface == "eth0")
            #expect(aSeesB.event.pair == nil)
            // Nobody reports its own advertisement back.
            #expect(!a.events.contains { $0.event == "resolved" && $0.name == "host-a" })
        }
    }

    @Test("the pairing flag appears on the peer and disappears again")
    func pairingFlag() async throws {
        try await LabSession.with(hosts: 2) { lab in
            let a = try lab.probe(host: 1, name: "inviter", deviceID: "AAAA1111", port: 7001)
            let b = try lab.probe(host: 2, name: "joiner", deviceID: "BBBB2222", port: 7002)
            _ = try await b.waitForResolved("inviter", timeout: .seconds(6)) { $0.pair == nil }
            _ = try await a.waitFor("published", timeout: .seconds(6)) { $0.event == "published" }

            var mark = b.mark
            var sent = ContinuousClock.now
            a.child.send("pair inv-42")
            let on = try await b.waitForResolved("inviter", from: mark, timeout: .seconds(5)) { $0.pair == "inv-42" }
            let onMs = LabSession.ms(on.at - sent)

            mark = b.mark
            sent = ContinuousClock.now
            a.child.send("unpair")
            let off = try await b.waitForResolved("inviter", from: mark, timeout: .seconds(5)) { $0.pair == nil }
            let offMs = LabSession.ms(off.at - sent)
            print("lab figure: pairing flag seen by the peer: on after \(onMs) ms, off after \(offMs) ms")
            #expect(on.event.hosts == ["198.18.0.1"])

            // Rapid updates from the caller's side race the Avahi thread; the last one wins.
            mark = b.mark
            for round in 0..<20 {
                a.child.send("pair burst-\(round)")
                a.child.send("unpair")
            }
            a.child.send("pair final")
            sent = ContinuousClock.now
            let last = try await b.waitForResolved("inviter", from: mark, timeout: .seconds(10)) { $0.pair == "final" }
            print("lab figure: after 41 rapid updates the peer saw the last one \(LabSession.ms(last.at - sent)) ms later")
            #expect(a.child.isRunning)
        }
    }

    @Test("avahi-daemon on A stops and starts: A reports it, then publishes and browses again without a restart")
    func daemonRestart() async throws {
        try await LabSession.with(hosts: 2) { lab in
            let a = try lab.probe(host: 1, name: "host-a", deviceID: "AAAA1111", port: 7001)
            let b = try lab.probe(host: 2, name: "host-b", deviceID: "BBBB2222", port: 7002)
            _ = try await a.waitForResolved("host-b", timeout: .seconds(15))
            _ = try await b.waitForResolved("host-a", timeout: .seconds(15))

            let markA = a.mark
            let markB = b.mark
            try await lab.run("avahi", ["1", "stop"])
            let down = try await a.waitFor("unavailable", from: markA, timeout: .seconds(5)) { $0.event == "unavailable" }
            #expect(down.event.code == "disconnected" || down.event.code == "daemonNotRunning")
            _ = try await b.waitFor("removed host-a", from: markB, timeout: .seconds(5)) {
                $0.event == "removed" && $0.name == "host-a"
            }

            let restarted = ContinuousClock.now
            try await lab.run("avahi", ["1", "start"])
            let up = try await a.waitFor("available", from: down.index, timeout: .seconds(10)) { $0.event == "available" }
            let republished = try await a.waitFor("published", from: up.index, timeout: .seconds(10)) {
                $0.event == "published" && $0.name == "host-a"
            }
            let rebrowsed = try await a.waitForResolved("host-b", from: up.index, timeout: .seconds(10)) {
                $0.hosts == ["198.18.0.2"]
            }
            let seenAgain = try await b.waitForResolved("host-a", from: markB, timeout: .seconds(10)) {
                $0.hosts == ["198.18.0.1"]
            }
            print("lab figure: after avahi-daemon restart on A: A available \(LabSession.ms(up.at - restarted)) ms, "
                  + "A published \(LabSession.ms(republished.at - restarted)) ms, A resolved B \(LabSession.ms(rebrowsed.at - restarted)) ms, "
                  + "B resolved A \(LabSession.ms(seenAgain.at - restarted)) ms")
            #expect(a.child.isRunning)
        }
    }

    @Test("B moves to a new address: A re-resolves it at the new address within 5 s")
    func addressChange() async throws {
        try await LabSession.with(hosts: 2) { lab in
            let a = try lab.probe(host: 1, name: "host-a", deviceID: "AAAA1111", port: 7001)
            _ = try lab.probe(host: 2, name: "host-b", deviceID: "BBBB2222", port: 7002)
            // Setup, not the figure: a resolve that misses the first answer (B still probing, a
            // loaded machine) waits for avahi-daemon's next query, 1, 2, 4 s… later.
            _ = try await a.waitForResolved("host-b", timeout: .seconds(15)) { $0.hosts == ["198.18.0.2"] }
            let mark = a.mark
            let moved = ContinuousClock.now
            try await lab.run("addr", ["2", "198.18.0.102"])
            let again = try await a.waitForResolved("host-b", from: mark, timeout: .seconds(5)) {
                $0.hosts == ["198.18.0.102"]
            }
            print("lab figure: address change on B re-resolved by A after \(LabSession.ms(again.at - moved)) ms")
        }
    }

    @Test("B's link goes down and up: B loses A, then finds it again within 5 s of the link coming back")
    func linkDownUp() async throws {
        try await LabSession.with(hosts: 2) { lab in
            _ = try lab.probe(host: 1, name: "host-a", deviceID: "AAAA1111", port: 7001)
            let b = try lab.probe(host: 2, name: "host-b", deviceID: "BBBB2222", port: 7002)
            _ = try await b.waitForResolved("host-a", timeout: .seconds(15)) { $0.hosts == ["198.18.0.1"] }
            let mark = b.mark
            try await lab.run("link", ["2", "down"])
            let lost = try await b.waitFor("removed host-a", from: mark, timeout: .seconds(5)) {
                $0.event == "removed" && $0.name == "host-a"
            }
            let up = ContinuousClock.now
            try await lab.run("link", ["2", "up"])
            let found = try await b.waitForResolved("host-a", from: lost.index, timeout: .seconds(5)) {
                $0.hosts == ["198.18.0.1"]
            }
            print("lab figure: link down/up on B: B resolved A again \(LabSession.ms(found.at - up)) ms after the link came up")
        }
    }

    @Test("two hosts advertise the same name: one takes an alternative name and each sees the other correctly")
    func nameCollision() async throws {
        try await LabSession.with(hosts: 2) { lab in
            let a = try lab.probe(host: 1, name: "same", deviceID: "AAAA1111", port: 7001)
            _ = try await a.waitFor("published same", timeout: .seconds(6)) { $0.event == "published" && $0.name == "same" }
            let b = try lab.probe(host: 2, name: "same", deviceID: "BBBB2222", port: 7002)
            // mDNS decides who keeps the name (the defender, or the later one after a conflict);
            // either way exactly one is renamed and both must end up seeing the other.
            let isRenamed: @Sendable (LabProbe.Event) -> Bool = { $0.event == "published" && ($0.name ?? "same") != "same" }
            var renamedProbe = b
            var renamedHost = 2
            let renamed: (event: LabProbe.Event, index: Int, at: ContinuousClock.Instant)
            let deadline = ContinuousClock.now + .seconds(10)
            while true {
                if let found = try? await b.waitFor("renamed", timeout: .milliseconds(100), where: isRenamed) {
                    renamed = found
                    break
                }
                if let found = try? await a.waitFor("renamed", timeout: .milliseconds(100), where: isRenamed) {
                    renamed = found
                    renamedProbe = a
                    renamedHost = 1
                    break
                }
                guard ContinuousClock.now < deadline else { throw LabError("neither host was renamed within 10 s") }
            }
            let newName = renamed.event.name ?? ""
            let keeper = renamedHost == 1 ? b : a
            let keeperHost = renamedHost == 1 ? 2 : 1
            print("lab figure: name collision: host \(renamedHost) renamed to '\(newName)' after \(renamed.event.t_ms) ms")
            #expect(newName.hasPrefix("same #"))
            _ = try await keeper.waitForResolved(newName, timeout: .seconds(6)) {
                $0.hosts == ["198.18.0.\(renamedHost)"] && $0.addresses?.first?.port == UInt16(7000 + renamedHost)
            }
            _ = try await renamedProbe.waitForResolved("same", timeout: .seconds(6)) {
                $0.hosts == ["198.18.0.\(keeperHost)"] && $0.addresses?.first?.port == UInt16(7000 + keeperHost)
            }
            // Nobody ever reports its own service (its own address and port) as a peer.
            for (probe, host) in [(a, 1), (b, 2)] {
                #expect(!probe.events.contains { $0.event == "resolved" && $0.addresses?.contains {
                    $0.host == "198.18.0.\(host)" && $0.port == UInt16(7000 + host) } == true })
            }
        }
    }

    @Test("starting and stopping quickly, mid-handshake with avahi-daemon, never crashes and leaves nothing published")
    func quickStartStop() async throws {
        try await LabSession.with(hosts: 2) { lab in
            for round in 1...8 {
                let seconds = Double(round % 6 + 1) * 0.05
                let quick = try lab.probe(host: 1, name: "quick-\(round)", deviceID: "AAAA1111", port: 7001,
                                          duration: seconds, extra: ["--ignore-stdin"])
                let status = await quick.child.waitForExit(timeout: .seconds(10))
                #expect(status == 0, "round \(round): exit status \(String(describing: status)): \(quick.child.errorOutput)")
            }
            let watcher = try lab.probe(host: 2, name: "watcher", deviceID: "BBBB2222", port: 7002, duration: 3,
                                        extra: ["--ignore-stdin"])
            #expect(await watcher.child.waitForExit(timeout: .seconds(10)) == 0)
            #expect(!watcher.events.contains { $0.event == "resolved" && ($0.name ?? "").hasPrefix("quick-") })
        }
    }

    @Test("with IPv6 on, a peer resolves to both an IPv4 and an IPv6 address")
    func dualStack() async throws {
        try await LabSession.with(hosts: 2, ipv6: true) { lab in
            let a = try lab.probe(host: 1, name: "host-a", deviceID: "AAAA1111", port: 7001)
            _ = try lab.probe(host: 2, name: "host-b", deviceID: "BBBB2222", port: 7002)
            let both = try await a.waitForResolved("host-b", timeout: .seconds(6)) { event in
                let families = Set(event.addresses?.map(\.family) ?? [])
                return families == ["ipv4", "ipv6"]
            }
            print("lab figure: dual stack: A resolved B at \(both.event.hosts.joined(separator: ", ")) after \(both.event.t_ms) ms")
            #expect(both.event.hosts.contains("198.18.0.2"))
        }
    }
}
