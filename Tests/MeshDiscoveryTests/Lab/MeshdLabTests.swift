import Foundation
import Testing

/// The discovery scenarios (docs/DISCOVERY.md) with real `meshd` daemons on lab hosts (network namespaces, each with its
/// own avahi-daemon). Host 1 is A, host 2 is B, host 3 is C; A and B are paired in each test
/// (by code), C is not. Each test prints its measured figures as `lab figure:` lines.
@Suite("meshd on lab hosts (network namespaces)", .serialized,
       .enabled(if: LabEnvironment.shouldRun, LabEnvironment.skipComment))
struct MeshdLabTests {
    let a = 1, b = 2, c = 3

    /// Hosts 1 and 2 running meshd, paired by code (with --address), channel active.
    func pairedAB(_ lab: MeshdLab) async throws {
        try await lab.start(a)
        try await lab.start(b)
        try await lab.pair(inviter: a, joiner: b, byAddress: true)
        try await lab.waitActive(a, b, timeout: .seconds(5))
    }

    @Test("(a) A and B find each other over mDNS and have an active channel within 5 s of start, no static config")
    func findEachOther() async throws {
        try await MeshdLab.with(hosts: 2) { lab in
            try await pairedAB(lab)
            await lab.stop(a)
            await lab.stop(b)
            // Both get new addresses while off: every stored address is stale, only mDNS knows.
            try await lab.session.run("addr", ["1", "198.18.0.11"])
            try await lab.session.run("addr", ["2", "198.18.0.12"])
            let started = ContinuousClock.now
            try await lab.start(a)
            try await lab.start(b)
            let active = try await lab.waitActive(a, b, timeout: .seconds(8))
            let ms = LabSession.ms(active - started)
            print("lab figure: (a) A and B active \(ms) ms after both daemons started (stored addresses stale, found over mDNS)")
            #expect(ms <= 5000)
            try await lab.waitUntil("both show the other's mDNS address", timeout: .seconds(3)) {
                let ab = try await lab.peer(a, named: "host-b")
                let ba = try await lab.peer(b, named: "host-a")
                return ab?.addresses.first == .init(address: "198.18.0.12:47470", source: "mdns")
                    && ba?.addresses.first == .init(address: "198.18.0.11:47470", source: "mdns")
            }
        }
    }

    @Test("(b) C sees A's and B's mDNS records but gets no channel and no reply bytes from either")
    func strangerGetsNothing() async throws {
        try await MeshdLab.with(hosts: 3) { lab in
            try await pairedAB(lab)
            try await lab.start(c)
            // One `avahi-browse -t` dumps what C's avahi-daemon has resolved so far; ask again
            // until both records are there (bounded). A freshly started avahi-daemon queries
            // with growing intervals (1, 2, 4 s…), so a missed first answer costs seconds: it
            // took 7 s in one run, hence 20.
            _ = try await lab.waitUntil("C's avahi-browse shows A's and B's records", timeout: .seconds(20)) {
                let browsed = try await lab.session.run("exec", ["3", "avahi-browse", "-rpt", "_sessionmesh._udp"])
                let resolved = browsed.split(separator: "\n").filter { $0.hasPrefix("=;") }
                return resolved.contains { $0.contains(";host-a;") && $0.contains(";198.18.0.1;47470;") && $0.contains("\"id=") }
                    && resolved.contains { $0.contains(";host-b;") && $0.contains(";198.18.0.2;47470;") }
            }
            try await lab.waitUntil("C's daemon resolved both", timeout: .seconds(5)) {
                try await lab.status(c).counters["discovery.mdns_services"] ?? 0 >= 2
            }
            #expect(try await lab.peers(c).isEmpty)
            let beforeA = try await lab.status(a).counters
            let beforeB = try await lab.status(b).counters

            // From C: a forged channel handshake, a pairing attempt while no code is live, a datagram.
            let script = """
                for host in 198.18.0.1 198.18.0.2; do
                  for kind in 1 2; do
                    if exec 3<>/dev/tcp/$host/47470; then
                      { printf 'SM\\001'; printf "\\\\00$kind"; printf '\\000\\140'; head -c 96 /dev/urandom; } >&3
                      n=$(timeout 3 cat <&3 | wc -c); exec 3<&- 3>&-
                      echo "tcp $host kind$kind reply=$n"
                    else echo "tcp $host kind$kind reply=connect-failed"; fi
                  done
                  exec 4<>/dev/udp/$host/47470
                  head -c 120 /dev/urandom >&4
                  n=$(timeout 1 cat <&4 2>/dev/null | wc -c); exec 4<&- 4>&-
                  echo "udp $host reply=$n"
                done
                """
            let probed = try await lab.session.run("exec", ["3", "bash", "-c", script], timeout: .seconds(30))
            let lines = probed.split(separator: "\n").map(String.init)
            print("lab figure: (b) bytes C got back: \(lines.joined(separator: "; "))")
            #expect(lines.count == 6)
            #expect(lines.allSatisfy { $0.hasSuffix("reply=0") })

            let afterA = try await lab.status(a).counters
            let afterB = try await lab.status(b).counters
            for (before, after, name) in [(beforeA, afterA, "A"), (beforeB, afterB, "B")] {
                // The bytes arrived and were dropped, silently.
                #expect(after["handshakes.failed", default: 0] > before["handshakes.failed", default: 0], "\(name)")
                // Random bytes are not a well-formed pairing hello: closed before any attempt starts.
                #expect(after["pairing.hellos_malformed", default: 0] > before["pairing.hellos_malformed", default: 0], "\(name)")
                #expect(after["datagrams.rejected", default: 0] > before["datagrams.rejected", default: 0], "\(name)")
            }
            #expect(try await lab.peers(c).isEmpty)
            #expect(try await lab.peers(a).map(\.name) == ["host-b"])
            #expect(try await lab.peers(b).map(\.name) == ["host-a"])
            #expect(try await lab.status(a).counters["handshakes.refused.unknown_key"] == 0, "C's daemon never dials an unpaired device")
        }
    }

    @Test("(c) A pairs with C by code alone while B shows another code; they connect; B is never contacted")
    func pairByCodeAlone() async throws {
        try await MeshdLab.with(hosts: 3) { lab in
            try await lab.start(a)
            try await lab.start(b)
            try await lab.start(c)
            let (codeA, waitingA) = try await lab.showCode(a)
            var (codeB, waitingB) = try await lab.showCode(b)
            for _ in 0..<5 where codeB.prefix(2) == codeA.prefix(2) {
                waitingB.terminate()
                (codeB, waitingB) = try await lab.showCode(b)
            }
            #expect(codeA.prefix(2) != codeB.prefix(2))
            defer { waitingA.terminate(); waitingB.terminate() }

            let started = ContinuousClock.now
            let joined = try await lab.meshctl(c, ["pair", codeA, "--json"])
            let paired = ContinuousClock.now
            #expect(joined.status == 0, "meshctl pair CODE without --address: \(joined.output) \(joined.errors)")
            #expect(joined.output.contains("\"paired\""))
            #expect(await waitingA.waitForExit(timeout: .seconds(10)) == 0)
            let active = try await lab.waitActive(a, c, timeout: .seconds(5))
            print("lab figure: (c) paired by code alone in \(LabSession.ms(paired - started)) ms (mDNS search + PAKE); "
                  + "channel active \(LabSession.ms(active - paired)) ms later")
            #expect(try await lab.peer(c, named: "host-a")?.addresses.map(\.address).contains("198.18.0.1:47470") == true)

            // B's code was live all along and never tried: no attempt reached B.
            #expect(waitingB.isRunning)
            let countersB = try await lab.status(b).counters
            #expect(countersB["pairing.attempts_failed"] == 0 && countersB["pairing.attempts_refused"] == 0)

            // A code nobody on the network advertises (C's own: a daemon never sees its own
            // service) finds nobody, and says so within seconds.
            var (codeC, waitingC) = try await lab.showCode(c)
            for _ in 0..<5 where codeC.prefix(2) == codeB.prefix(2) || codeC.prefix(2) == codeA.prefix(2) {
                waitingC.terminate()
                (codeC, waitingC) = try await lab.showCode(c)
            }
            defer { waitingC.terminate() }
            let retried = ContinuousClock.now
            let again = try await lab.meshctl(c, ["pair", codeC, "--json"])
            #expect(again.status == 1)
            #expect(again.output.contains("inviter-not-found"), "\(again.output) \(again.errors)")
            print("lab figure: (c) a code nobody advertises: inviter-not-found after \(LabSession.ms(ContinuousClock.now - retried)) ms")
        }
    }

    @Test("(d) B's link goes down: A reports B unreachable when the lease expires, reliable sends queue; link back: channel within 5 s, each queued message arrives once")
    func linkDownAndUp() async throws {
        try await MeshdLab.with(hosts: 2) { lab in
            try await pairedAB(lab)
            let deviceB = try await lab.status(b).deviceID
            // An app on B: meshctl watch prints (and acknowledges) every envelope of feature "lab".
            let watch = try await lab.watch(b, feature: "lab")
            defer { watch.terminate() }

            let down = ContinuousClock.now
            try await lab.session.run("link", ["2", "down"])
            let unreachable = try await lab.waitUntil("A reports B unreachable", timeout: .seconds(6)) {
                try await lab.peer(a, named: "host-b")?.reachable == false
            }
            let downMs = LabSession.ms(unreachable - down)
            print("lab figure: (d) A reported B unreachable \(downMs) ms after B's link went down (lease 2 s)")
            #expect(downMs >= 1000 && downMs <= 4000)

            // Reliable messages to B while it is away: accepted and queued on A.
            let messages = (1...5).map { "queued-\($0)" }
            for message in messages {
                let sent = try await lab.meshctl(a, ["send", "--feature", "lab", "--mode", "reliable", "--to", deviceB, "--json", message])
                #expect(sent.status == 0, "\(sent.output) \(sent.errors)")
                #expect(sent.output.contains("\"queued\""), "\(sent.output)")
            }
            let queued = try await lab.meshctl(a, ["queue", "--json"])
            #expect(MeshdLab.jsonObject(queued.output)?["items"].flatMap { $0 as? [Any] }?.count == messages.count)
            // Stay down long enough for the reconnect backoff to grow.
            try await Task.sleep(for: .seconds(3))

            let up = ContinuousClock.now
            try await lab.session.run("link", ["2", "up"])
            let active = try await lab.waitActive(a, b, timeout: .seconds(8))
            let upMs = LabSession.ms(active - up)
            print("lab figure: (d) channel active again \(upMs) ms after B's link came back up")
            #expect(upMs <= 5000)

            let arrived = try await lab.waitUntil("the queued messages on B", timeout: .seconds(10)) {
                MeshdLab.envelopePayloads(watch).count >= messages.count
            }
            print("lab figure: (d) \(messages.count) queued reliable messages delivered \(LabSession.ms(arrived - up)) ms after the link came up")
            // Once B acknowledged every item, A sends none again: a duplicate would be here now.
            try await lab.waitUntil("A's queue drained", timeout: .seconds(5)) {
                let left = try await lab.meshctl(a, ["queue", "--json"])
                return MeshdLab.jsonObject(left.output)?["items"].flatMap { $0 as? [Any] }?.isEmpty == true
            }
            #expect(MeshdLab.envelopePayloads(watch) == messages, "each queued message exactly once, in order")
        }
    }

    @Test("(e) B moves to a new address: the channel comes back at the new address within 5 s")
    func addressChange() async throws {
        try await MeshdLab.with(hosts: 2) { lab in
            try await pairedAB(lab)
            let before = try #require(try await lab.peer(a, named: "host-b")?.lastHandshake)
            let moved = ContinuousClock.now
            try await lab.session.run("addr", ["2", "198.18.0.102"])
            let active = try await lab.waitActive(a, b, timeout: .seconds(8)) { ab, ba in
                (ab.lastHandshake ?? 0) > before && (ba.lastHandshake ?? 0) > before
                    && ab.addresses.map(\.address).contains("198.18.0.102:47470")
            }
            let ms = LabSession.ms(active - moved)
            print("lab figure: (e) channel re-handshaken at B's new address \(ms) ms after the move")
            #expect(ms <= 5000)
            let advertised = try await lab.waitUntil("A's mDNS view of B's new address", timeout: .seconds(8)) {
                try await lab.peer(a, named: "host-b")?.addresses.first == .init(address: "198.18.0.102:47470", source: "mdns")
            }
            print("lab figure: (e) A's mDNS view showed B's new address \(LabSession.ms(advertised - moved)) ms after the move")
        }
    }

    @Test("(f) avahi-daemon on A stops and starts: A recovers discovery without a restart")
    func avahiRestart() async throws {
        try await MeshdLab.with(hosts: 2) { lab in
            try await pairedAB(lab)
            try await lab.waitUntil("both found over mDNS", timeout: .seconds(5)) {
                let sa = try await lab.status(a).counters, sb = try await lab.status(b).counters
                return sa["discovery.paired_found"] == 1 && sb["discovery.paired_found"] == 1
            }
            try await lab.session.run("avahi", ["1", "stop"])
            try await lab.waitUntil("A notices Avahi is gone", timeout: .seconds(5)) {
                try await lab.status(a).counters["discovery.mdns_available"] == 0
            }
            try await lab.waitUntil("B no longer sees A's service", timeout: .seconds(5)) {
                try await lab.status(b).counters["discovery.paired_found"] == 0
            }
            #expect(try await lab.peer(a, named: "host-b")?.channel == "active", "the channel does not depend on Avahi")

            let restarted = ContinuousClock.now
            try await lab.session.run("avahi", ["1", "start"])
            let recovered = try await lab.waitUntil("A publishes and browses again", timeout: .seconds(10)) {
                let counters = try await lab.status(a).counters
                return counters["discovery.mdns_available"] == 1 && counters["discovery.mdns_published"] == 1
                    && counters["discovery.paired_found"] == 1
            }
            let seen = try await lab.waitUntil("B sees A again", timeout: .seconds(10)) {
                try await lab.status(b).counters["discovery.paired_found"] == 1
            }
            print("lab figure: (f) after avahi-daemon restart on A: A published and found B \(LabSession.ms(recovered - restarted)) ms, "
                  + "B found A \(LabSession.ms(seen - restarted)) ms")

            // Discovery works end to end again: A moves, B learns the new address from A's Avahi.
            let before = try #require(try await lab.peer(b, named: "host-a")?.lastHandshake)
            let moved = ContinuousClock.now
            try await lab.session.run("addr", ["1", "198.18.0.101"])
            let active = try await lab.waitActive(a, b, timeout: .seconds(8)) { ab, ba in
                (ba.lastHandshake ?? 0) > before && ba.addresses.contains(.init(address: "198.18.0.101:47470", source: "mdns"))
            }
            print("lab figure: (f) then A moved: channel active at the new address \(LabSession.ms(active - moved)) ms later")
            #expect(LabSession.ms(active - moved) <= 5000)
            let warnings = lab.daemon(a)?.errorOutput.split(separator: "\n").filter { $0.contains("warning") && $0.contains("mDNS discovery unavailable") }
            #expect(warnings?.count == 1, "the outage is logged once: \(warnings ?? [])")
        }
    }

    @Test("(g) without any avahi-daemon meshd logs it once and connects over a static peer")
    func noAvahiStaticPeer() async throws {
        try await MeshdLab.with(hosts: 2) { lab in
            try await lab.session.run("avahi", ["1", "stop"])
            try await lab.session.run("avahi", ["2", "stop"])
            try await lab.start(a, extra: ["--peer", "198.18.0.2:47470"])
            try await lab.start(b)
            try await lab.pair(inviter: a, joiner: b, byAddress: true)
            try await lab.waitActive(a, b, timeout: .seconds(5))
            await lab.stop(a)
            await lab.stop(b)
            // A moves while off: B's stored address for A is stale; only A's static peer entry works.
            try await lab.session.run("addr", ["1", "198.18.0.11"])
            let started = ContinuousClock.now
            try await lab.start(a, extra: ["--peer", "198.18.0.2:47470"])
            try await lab.start(b)
            let active = try await lab.waitActive(a, b, timeout: .seconds(8))
            print("lab figure: (g) no Avahi anywhere: channel over the static peer \(LabSession.ms(active - started)) ms after start")
            #expect(try await lab.peer(a, named: "host-b")?.addresses.contains(.init(address: "198.18.0.2:47470", source: "static")) == true)
            #expect(try await lab.status(a).counters["discovery.mdns_available"] == 0)
            let warnings = lab.daemon(a)?.errorOutput.split(separator: "\n").filter { $0.contains("warning") && $0.contains("mDNS discovery unavailable") }
            #expect(warnings?.count == 1, "logged once: \(warnings ?? [])")
        }
    }
}
