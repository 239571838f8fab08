#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing

/// meshd still works inside the sandbox of systemd/meshd.service: `scripts/sandbox-run` applies
/// every setting of the unit (mount and UTS namespaces, seccomp filter, capabilities, user)
/// without systemd as PID 1, and a daemon started so pairs with an ordinary one over loopback,
/// pings it, and carries a message each way.
@Suite("meshd under its systemd sandbox", .serialized)
struct MeshdSandboxTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static var unit: String { repository.appendingPathComponent("systemd/meshd.service").path }
    static var script: String { repository.appendingPathComponent("scripts/sandbox-run").path }

    /// Nil when the sandbox can be built here; otherwise why not.
    static let unavailableReason: String? = {
        if let reason = TestAccounts.unavailableReason { return reason }
        for tool in ["/usr/bin/python3", "/usr/bin/unshare", "/usr/bin/systemd-analyze", "/usr/bin/mount"]
        where !FileManager.default.isExecutableFile(atPath: tool) {
            return "\(tool) is missing (run scripts/install-deps)"
        }
        guard dlopen("libseccomp.so.2", RTLD_NOW) != nil else { return "libseccomp.so.2 is missing (run scripts/install-deps)" }
        guard ChildProcess.executable("meshd") != nil, ChildProcess.executable("meshctl") != nil else { return "meshd is not built" }
        return nil
    }()
    static var shouldRun: Bool { unavailableReason == nil || TestAccounts.required }
    static var skipComment: Comment {
        Comment(rawValue: "skipped: \(unavailableReason ?? "-"); set MESH_REQUIRE_LAB=1 to make this a failure")
    }

    @Test(.enabled(if: shouldRun, skipComment))
    func meshdPairsPingsAndCarriesMessagesUnderTheUnitsSandbox() async throws {
        if let reason = Self.unavailableReason { throw DaemonProcessError("MESH_REQUIRE_LAB=1 but the sandbox cannot run: \(reason)") }
        let accounts = try TestAccounts()
        defer { accounts.removeAll() }
        let user = "smsbx\(getpid() % 100_000)"
        let account = try accounts.user(user)
        // StateDirectory= and RuntimeDirectory= stand-ins, outside /tmp (PrivateTmp replaces it).
        let root = "/run/smsandbox-\(getpid())"
        let state = root + "/state", runtime = root + "/run"
        defer { try? FileManager.default.removeItem(atPath: root) }
        for folder in [root, state, runtime] { try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true) }
        #expect(chmod(root, 0o755) == 0)
        for folder in [state, runtime] {
            #expect(chown(folder, account.uid, account.gid) == 0)
            #expect(chmod(folder, 0o700) == 0)
        }
        let socket = runtime + "/meshd.sock"
        let sandboxed = try ChildProcess("meshd", ["--config", "/dev/null", "--state-dir", state, "--socket", socket,
                                                   "--listen", "127.0.0.1:0", "--no-mdns", "--name", "sandboxed", "--log-level", "warning"],
                                         stderrToStdout: true,
                                         launcher: ["/usr/bin/python3", Self.script, Self.unit, "--user", user, "--state", state,
                                                    "--runtime", runtime, "--"])
        defer { sandboxed.terminate(); sandboxed.process.waitUntilExit() }
        let listen = try? await eventually("the sandboxed meshd answers", timeout: 10) { () -> String? in
            guard let result = try? await DaemonProcess.run("meshctl", ["--socket", socket, "status", "--json"], timeout: 5),
                  result.status == 0,
                  let object = try? JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: Any] else { return nil }
            return object["listen"] as? String
        }
        let address = try #require(listen, "the sandboxed meshd never answered")

        // The sandbox is really on: the kernel reports the filter, no_new_privs, no capabilities, the user.
        let pid = sandboxed.process.processIdentifier
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        #expect(status.contains("Seccomp:\t2"), "\(status)")
        #expect(status.contains("NoNewPrivs:\t1"))
        #expect(status.contains("CapBnd:\t0000000000000000"))
        #expect(status.contains("Uid:\t\(account.uid)\t"))

        let peer = try await DaemonProcess(name: "plain", extraArguments: ["--no-mdns"])
        defer { peer.stopNow() }
        let waiter = try ChildProcess("meshctl", ["--socket", socket, "pair", "--json"])
        defer { waiter.terminate(); waiter.process.waitUntilExit() }
        let first = try #require(try await waiter.readLine(timeout: 10))
        let code = try #require((try JSONSerialization.jsonObject(with: Data(first.utf8)) as? [String: Any])?["code"] as? String)
        let join = try await peer.meshctl(["pair", code, "--address", address])
        #expect(join.status == 0, "\(join.output)")
        let paired = try #require(try await waiter.readLine(timeout: 10))
        #expect(paired.contains("\"deviceID\""), "\(paired)")
        let ownID = try #require(try await DaemonProcess.run("meshctl", ["--socket", socket, "status", "--json"]).output
            .data(using: .utf8).flatMap { try JSONSerialization.jsonObject(with: $0) as? [String: Any] }?["deviceID"] as? String)
        try await peer.waitForChannel(ownID, timeout: 15)
        let ping = try await peer.meshctl(["ping", String(ownID.prefix(7)), "--count", "5"])
        #expect(ping.status == 0, "\(ping.output)")

        // A message each way over the channel: the sandboxed daemon sends, stores and receives.
        let peerWatch = try WatchProcess(peer, feature: "sandbox")
        defer { peerWatch.stopNow() }
        let ownWatch = try WatchProcess(socket: socket, feature: "sandbox")
        defer { ownWatch.stopNow() }
        _ = try await peerWatch.next(type: "attached", timeout: 10)
        _ = try await ownWatch.next(type: "attached", timeout: 10)
        let outbound = try await DaemonProcess.run("meshctl", ["--socket", socket, "send", "--feature", "sandbox", "--mode", "reliable",
                                                              "from-the-sandbox"])
        #expect(outbound.status == 0, "\(outbound.output)")
        let received = try await peerWatch.next(type: "envelope", timeout: 10)
        #expect(received["payload"] as? String == "from-the-sandbox")
        let inbound = try await peer.meshctl(["send", "--feature", "sandbox", "--mode", "reliable", "into-the-sandbox"])
        #expect(inbound.status == 0, "\(inbound.output)")
        let delivered = try await ownWatch.next(type: "envelope", timeout: 10)
        #expect(delivered["payload"] as? String == "into-the-sandbox")
    }
}
