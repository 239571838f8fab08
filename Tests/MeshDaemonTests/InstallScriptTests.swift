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

    /// `make uninstall` with the PREFIX and DESTDIR `make install` had: nothing of it is left,
    /// not even the folders it made under the staging root; a file of someone else is kept.
    @Test(.enabled(if: python != nil && FileManager.default.isExecutableFile(atPath: "/usr/bin/make"), "python3 and make"))
    func uninstallRemovesWhatInstallLaidOut() async throws {
        let destination = try TemporaryFolder.make()
        defer { try? FileManager.default.removeItem(atPath: destination) }
        let environment = ["PREFIX": "/usr", "DESTDIR": destination]
        let install = try await ScriptProcess.run("install", [ChildProcess.binDirectory.path], environment: environment, timeout: 60)
        #expect(install.status == 0, "\(install.output)")
        let installed = Self.files(under: destination)
        #expect(installed.contains("/usr/bin/meshd") && installed.contains("/usr/share/man/man8/meshd.8"))
        // A file install did not lay out, in a folder it shares.
        try Data("other\n".utf8).write(to: URL(fileURLWithPath: destination + "/usr/bin/other-tool"))

        let uninstall = try await Self.make(["uninstall", "PREFIX=/usr", "DESTDIR=\(destination)"])
        #expect(uninstall.status == 0, "\(uninstall.output)")
        #expect(Self.files(under: destination) == ["/usr/bin/other-tool"], "left behind: \(Self.files(under: destination))")
        #expect(!FileManager.default.fileExists(atPath: destination + "/usr/share/doc/sessionmesh"))
        #expect(!FileManager.default.fileExists(atPath: destination + "/usr/lib/systemd"))
        #expect(uninstall.output.contains("/usr/bin/meshctl"))

        // Run again: nothing to remove is no error.
        let again = try await Self.make(["uninstall", "PREFIX=/usr", "DESTDIR=\(destination)"])
        #expect(again.status == 0, "\(again.output)")
    }

    /// Every regular file under `root`, as paths relative to it.
    static func files(under root: String) -> Set<String> {
        let enumerator = FileManager.default.enumerator(atPath: root)
        var found: Set<String> = []
        while let path = enumerator?.nextObject() as? String {
            var isFolder: ObjCBool = false
            if FileManager.default.fileExists(atPath: root + "/" + path, isDirectory: &isFolder), !isFolder.boolValue {
                found.insert("/" + path)
            }
        }
        return found
    }

    /// Runs `make ARGUMENTS` in the checkout.
    static func make(_ arguments: [String]) async throws -> (status: Int32, output: String) {
        try await blocking {
            let process = Process()
            let pipe = Pipe()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/make")
            process.arguments = ["--no-print-directory"] + arguments
            process.currentDirectoryURL = ScriptProcess.root
            process.standardOutput = pipe
            process.standardError = pipe
            try process.run()
            let output = PipeReader.readToEnd(pipe.fileHandleForReading, timeout: 60)
            process.waitUntilExit()
            return (process.terminationStatus, String(decoding: output, as: UTF8.self))
        }
    }
}
