import Foundation
import Testing

/// `make install` as a packager runs it (`PREFIX=/usr DESTDIR=…`), on the binaries this build
/// made: what lands where, and that completions and man pages cover every command.
@Suite("make install")
struct InstallScriptTests {
    static let python = ["/usr/bin/python3", "/usr/local/bin/python3"].first { FileManager.default.isExecutableFile(atPath: $0) }

    @Test(.enabled(if: python != nil, "python3 generates the man pages"))
    func installPutsBinariesUnitsSysusersCompletionsAndManPagesUnderDestdir() async throws {
        let destination = try TemporaryFolder.make()
        defer { try? FileManager.default.removeItem(atPath: destination) }
        let run = try await ScriptProcess.run("install", [ChildProcess.binDirectory.path], environment: ["PREFIX": "/usr", "DESTDIR": destination], timeout: 60)
        #expect(run.status == 0, "\(run.output)")
        func read(_ path: String) -> String {
            (try? String(contentsOfFile: destination + path, encoding: .utf8)) ?? ""
        }
        for binary in ["/usr/bin/meshd", "/usr/bin/meshctl"] {
            #expect(FileManager.default.isExecutableFile(atPath: destination + binary), "\(binary) missing")
        }
        #expect(read("/usr/lib/systemd/system/meshd.service").contains("\nExecStart=/usr/bin/meshd\n"))
        #expect(read("/usr/lib/systemd/system/meshd.service").contains("Documentation=file:///usr/share/doc/sessionmesh/CONFIG.md"))
        #expect(read("/usr/lib/systemd/user/meshd.service").contains("\nExecStart=/usr/bin/meshd --user\n"))
        #expect(read("/usr/lib/sysusers.d/sessionmesh.conf").contains("u sessionmesh "))
        #expect(!read("/usr/share/doc/sessionmesh/CONFIG.md").isEmpty)

        let bash = read("/usr/share/bash-completion/completions/meshctl")
        let zsh = read("/usr/share/zsh/site-functions/_meshctl")
        let fish = read("/usr/share/fish/vendor_completions.d/meshctl.fish")
        #expect(zsh.hasPrefix("#compdef meshctl"))
        #expect(fish.contains("complete -c 'meshctl'"))
        let manual = read("/usr/share/man/man1/meshctl.1")
        #expect(manual.hasPrefix(#".TH "MESHCTL" "1""#))
        // Every command is in the completions and has a section in the manual.
        for command in ["status", "peers", "pair", "unpair", "ping", "send", "watch", "snapshot", "queue", "sessions"] {
            #expect(bash.contains(command) && zsh.contains(command) && fish.contains(command), "\(command) not completed")
            #expect(manual.contains("\n.SS \(command)\n"), "\(command) has no section in meshctl.1")
        }
        #expect(manual.contains(#"\fB\-\-counters\fR"#))
        let daemonManual = read("/usr/share/man/man8/meshd.8")
        #expect(daemonManual.hasPrefix(#".TH "MESHD" "8""#) && daemonManual.contains(#"\-\-listen"#))
        // Nothing generated is left in the checkout.
        #expect(!FileManager.default.fileExists(atPath: ScriptProcess.root.appendingPathComponent("meshctl.1").path))
    }
}
