#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing

/// `make demo` as a user runs it: the script itself, on the binaries this build made, so it
/// cannot rot unnoticed.
@Suite("make demo", .serialized)
struct DemoScriptTests {
    static let root = ScriptProcess.root
    static let bin = ChildProcess.binDirectory.path
    static let python = ["/usr/bin/python3", "/usr/local/bin/python3"].first { FileManager.default.isExecutableFile(atPath: $0) }
    static let demoCanRun = python != nil && ChildProcess.executable("shared-timer") != nil && ChildProcess.executable("meshd") != nil
        && FileManager.default.fileExists(atPath: root.appendingPathComponent("clients/python/examples/shared_timer.py").path)
    /// What the demo needs for its namespace mode (it picks it by itself as root).
    static let labCanRun = getuid() == 0 && demoCanRun
        && ["ip", "unshare", "dbus-daemon", "avahi-daemon"].allSatisfy { tool in
            ["/usr/sbin/", "/usr/bin/", "/sbin/", "/bin/"].contains { FileManager.default.isExecutableFile(atPath: $0 + tool) }
        }

    /// What every run of the demo must show: five timer rows agreeing, each note once, a pass.
    static func checkDemoOutput(_ output: String) {
        let lines = output.split(separator: "\n").map(String.init)
        let rows = lines.filter { $0.hasSuffix(" ok") && $0.contains(" ms ") }
        #expect(rows.count == 5, "\(output)")
        #expect(!lines.contains { $0.contains("DISAGREE") })
        #expect(lines.contains { $0.hasPrefix("alpha: session closed: delivered to 1 device(s)") }, "\(output)")
        #expect(lines.contains { $0.hasPrefix("beta:  session closed by ") })
        for note in 1...3 {
            #expect(lines.contains { $0.hasPrefix("beta received note \(note) ") && $0.hasSuffix(" 1 time") }, "\(output)")
        }
        #expect(lines.contains("alpha sent 3 notes; 3 queued for beta"))
        #expect(lines.contains { $0.hasPrefix("== demo passed in ") })
    }

    @Test(.enabled(if: demoCanRun, "needs python3, the shared-timer build and clients/python"))
    func theLoopbackDemoShowsAgreeingTimersAndEachNoteOnce() async throws {
        let run = try await ScriptProcess.run("demo", ["--loopback", Self.bin], timeout: 90)
        #expect(run.status == 0, "\(run.output)")
        Self.checkDemoOutput(run.output)
        #expect(run.output.contains("loopback"))
        #expect(run.seconds < 60, "the demo took \(run.seconds) s")
    }

    @Test(.enabled(if: labCanRun, "needs root, ip, unshare, dbus-daemon and avahi-daemon (the demo's namespace mode)"))
    func theNamespaceDemoPairsOverMDNS() async throws {
        let run = try await ScriptProcess.run("demo", [Self.bin], timeout: 120)
        #expect(run.status == 0, "\(run.output)")
        Self.checkDemoOutput(run.output)
        #expect(run.output.contains("network namespaces"))
        #expect(run.seconds < 60, "the demo took \(run.seconds) s")
        // The lab deleted the namespaces it made (other labs may be running beside it).
        let teardown = try #require(run.output.split(separator: "\n").first { $0.hasPrefix("lab: smlab") && $0.hasSuffix(" torn down") })
        let lab = String(teardown.dropFirst("lab: ".count).prefix { $0 != " " })
        let namespaces = try await DaemonProcess.run("/usr/sbin/ip", ["netns", "list"], timeout: 10).output
        #expect(!namespaces.split(separator: "\n").contains { $0.hasPrefix(lab + "h") || $0.hasPrefix(lab + "br") }, "left over: \(namespaces)")
    }
}
