import Foundation
import Testing

/// AvahiPeerDiscovery with nothing to talk to: it must report `.unavailable`, keep running,
/// not crash, and recover once avahi-daemon appears.
@Suite("Discovery without avahi-daemon")
struct NoDaemonLabTests {
    @Test("without a D-Bus system bus the probe reports unavailable and exits cleanly (no root needed)")
    func noBus() async throws {
        guard let probe = LabEnvironment.probePath else {
            Issue.record("mesh-discovery-probe is not built; run: swift build --product mesh-discovery-probe")
            return
        }
        // A bus address that cannot exist: nothing can be reached, so nothing is published.
        let result = try await ChildProcess.run(probe, ["--name", "lonely", "--device-id", "AAAA1111", "--duration", "1.5",
                                                        "--ignore-stdin", "--static", "198.18.0.9:7000"],
                                                environment: ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/sessionmesh-test-bus"],
                                                timeout: .seconds(20))
        #expect(result.status == 0, "probe exit status \(result.status): \(result.errors)")
        #expect(result.output.contains("\"event\":\"unavailable\""))
        #expect(result.output.contains("\"code\":\"busUnreachable\""))
        #expect(result.output.contains("\"source\":\"static\""), "static peers keep working without Avahi")
        #expect(result.output.contains("\"event\":\"stopped\""))
        let warnings = result.errors.split(separator: "\n").filter { $0.contains("warning") && $0.contains("mDNS discovery unavailable") }
        #expect(warnings.count == 1, "the outage is logged once as a warning, got: \(warnings)")
    }

    @Test("in a lab host with no avahi-daemon, or no bus at all, the probe reports unavailable and recovers when avahi starts",
          .enabled(if: LabEnvironment.shouldRun, LabEnvironment.skipComment))
    func noDaemonInLab() async throws {
        try await LabSession.with(hosts: 1) { lab in
            try await lab.run("avahi", ["1", "stop"])
            let waiting = try lab.probe(host: 1, name: "lonely", deviceID: "AAAA1111", port: 7001)
            let absent = try await waiting.waitFor("unavailable", timeout: .seconds(5)) { $0.event == "unavailable" }
            #expect(absent.event.code == "daemonNotRunning")

            let bare = try lab.probe(host: 1, name: "bare", deviceID: "BBBB2222", port: 7002, duration: 2, bare: true)
            let noBus = try await bare.waitFor("unavailable", timeout: .seconds(5)) { $0.event == "unavailable" }
            #expect(noBus.event.code == "busUnreachable")
            #expect(await bare.child.waitForExit(timeout: .seconds(10)) == 0)

            let started = ContinuousClock.now
            try await lab.run("avahi", ["1", "start"])
            let published = try await waiting.waitFor("published", from: absent.index, timeout: .seconds(10)) {
                $0.event == "published" && $0.name == "lonely"
            }
            print("lab figure: avahi-daemon started late: probe published \(LabSession.ms(published.at - started)) ms after the start")
            #expect(waiting.child.isRunning)
        }
    }
}
