#if canImport(Glibc)
import Glibc
#endif
import Foundation
import SessionMeshClient
import Testing

/// The control role against a real `meshd` run as root, with clients under real other uids
/// (created for the test): pairing, cancelling a code and unpairing are refused with
/// `not-permitted` for a uid outside `control_allow`, allowed for a listed uid and for a member
/// (supplementary, known only to the user database) of a listed group; reading stays open.
@Suite("control role (real uids)", .serialized)
struct LocalAPIControlRoleProcessTests {
    static let python = ["/usr/bin/python3", "/usr/local/bin/python3"].first { FileManager.default.isExecutableFile(atPath: $0) }
    static let ready = TestAccounts.shouldRun && ChildProcess.executable("meshd") != nil && ChildProcess.executable("meshctl") != nil
        && python != nil

    /// One request over the local API, as JSON; prints `ok BODY` or `error CODE MESSAGE`.
    static let request = """
        import json, socket, struct, sys
        s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
        ops = {"pair.wait": 0x11, "pair.cancel": 0x12, "pair.create": 0x10}
        body = sys.argv[3].encode()
        s.sendall(struct.pack(">HBBHHII", 0x534D, 1, 1, ops[sys.argv[2]], 0, 7, len(body)) + body)
        data = b""
        while len(data) < 16 or len(data) < 16 + struct.unpack(">I", data[12:16])[0]:
            chunk = s.recv(65536)
            if not chunk: break
            data += chunk
        kind = data[3]
        reply = json.loads(data[16:])
        print("ok " + json.dumps(reply) if kind == 2 else "error " + reply["code"] + " " + reply["message"])
        """

    @Test(.enabled(if: ready, TestAccounts.skipComment))
    func onlyTheControlRoleMayPairCancelOrUnpair() async throws {
        let accounts = try TestAccounts()
        defer { accounts.removeAll() }
        let tag = "\(getpid() % 100_000)"
        let socketGroup = "smsock\(tag)", adminGroup = "smadm\(tag)"
        let socketGID = try accounts.group(socketGroup)
        _ = try accounts.group(adminGroup)
        let listed = try accounts.user("smuid\(tag)", supplementary: [socketGroup])
        let member = try accounts.user("smgrp\(tag)", supplementary: [socketGroup, adminGroup])
        let other = try accounts.user("smnon\(tag)", supplementary: [socketGroup])

        let folder = try TemporaryFolder.make()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        #expect(chmod(folder, 0o755) == 0)
        let socket = folder + "/meshd.sock"
        try """
            socket_mode = "0660"
            control_allow = ["\(listed.uid)", "@\(adminGroup)"]
            """.write(toFile: folder + "/meshd.toml", atomically: true, encoding: .utf8)
        let meshd = try ChildProcess("meshd", ["--config", folder + "/meshd.toml", "--state-dir", folder + "/state",
                                               "--socket", socket, "--listen", "127.0.0.1:0", "--no-mdns", "--log-level", "warning"])
        defer { meshd.terminate(); meshd.process.waitUntilExit() }
        try await Self.waitForSocket(socket)
        #expect(chown(socket, uid_t.max, socketGID) == 0)

        // Root makes a code and waits on it.
        let waiter = try ChildProcess("meshctl", ["--socket", socket, "pair", "--json"])
        defer { waiter.terminate(); waiter.process.waitUntilExit() }
        let first = try #require(try await waiter.readLine(timeout: 10))
        let code = try #require((try JSONSerialization.jsonObject(with: Data(first.utf8)) as? [String: Any])?["code"] as? String)

        // Neither listed nor in the group: reading works, every control operation is refused,
        // meshctl says so in one line naming the operation.
        let asOther = ["--reuid=\(other.uid)", "--regid=\(other.gid)", "--init-groups"]
        let status = try await Self.run(asOther, meshctl: ["--socket", socket, "status"])
        #expect(status.status == 0, "\(status.output)")
        for (arguments, operation) in [(["pair"], "pair.create"), (["pair", code, "--address", "127.0.0.1:9"], "pair.join"),
                                       (["unpair", "ABCDEFG"], "unpair")] {
            let result = try await Self.run(asOther, meshctl: ["--socket", socket] + arguments)
            #expect(result.status == 1, "\(arguments): \(result.output)")
            let lines = result.output.split(separator: "\n").filter { $0.contains("not permitted") }
            #expect(lines.count == 1 && lines[0].hasPrefix("meshctl: not permitted: \(operation) ")
                    && lines[0].contains("uid \(other.uid)") && lines[0].contains("control_allow"), "\(arguments): \(result.output)")
        }
        for operation in ["pair.cancel", "pair.wait"] {
            let result = try await Self.run(asOther, python: [socket, operation, #"{"code":"\#(code)"}"#])
            #expect(result.output.hasPrefix("error not-permitted not permitted: \(operation) "), "\(result.output)")
        }

        // A uid listed by number: past the role check (the device is unknown).
        let unpair = try await Self.run(["--reuid=\(listed.uid)", "--regid=\(listed.gid)", "--init-groups"],
                                        meshctl: ["--socket", socket, "unpair", "ABCDEFG"])
        #expect(unpair.status == 1 && unpair.output.contains("no paired device matches"), "\(unpair.output)")

        // The code survived the refused cancel: a member of the listed group (known only to the
        // user database: the process runs with no supplementary groups) cancels it, and root's
        // waiting `meshctl pair` ends with that.
        let cancel = try await Self.run(["--reuid=\(member.uid)", "--regid=\(socketGID)", "--clear-groups"],
                                        python: [socket, "pair.cancel", #"{"code":"\#(code)"}"#])
        #expect(cancel.output.hasPrefix("ok {}"), "\(cancel.output)")
        let last = try await waiter.readLine(timeout: 10)
        #expect(last?.contains("pairing-cancelled") == true, "\(String(describing: last))")
    }

    /// One uid holding every connection it may open does not lock another uid (meshctl) out.
    @Test(.enabled(if: ready, TestAccounts.skipComment))
    func aUIDAtItsConnectionLimitDoesNotLockOthersOut() async throws {
        let accounts = try TestAccounts()
        defer { accounts.removeAll() }
        let tag = "\(getpid() % 100_000)"
        let socketGroup = "smsock\(tag)"
        let socketGID = try accounts.group(socketGroup)
        let other = try accounts.user("smnon\(tag)", supplementary: [socketGroup])
        let folder = try TemporaryFolder.make()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        #expect(chmod(folder, 0o755) == 0)
        let socket = folder + "/meshd.sock"
        try "socket_mode = \"0660\"\napi_max_connections_per_uid = 3\n".write(toFile: folder + "/meshd.toml", atomically: true, encoding: .utf8)
        let meshd = try ChildProcess("meshd", ["--config", folder + "/meshd.toml", "--state-dir", folder + "/state",
                                               "--socket", socket, "--listen", "127.0.0.1:0", "--no-mdns", "--log-level", "error"])
        defer { meshd.terminate(); meshd.process.waitUntilExit() }
        try await Self.waitForSocket(socket)
        #expect(chown(socket, uid_t.max, socketGID) == 0)

        // This process (root) takes all three of its connections and keeps them open.
        var held: [MeshClient] = []
        for _ in 0..<3 { held.append(try await MeshClient.connect(socketPath: socket)) }
        for client in held { _ = try await client.status() }
        let refused = try await DaemonProcess.run("meshctl", ["--socket", socket, "status"], timeout: 10)
        #expect(refused.status != 0 && refused.output.contains("uid \(geteuid()) already has 3 local connections open"), "\(refused.output)")
        let status = try await Self.run(["--reuid=\(other.uid)", "--regid=\(other.gid)", "--init-groups"],
                                        meshctl: ["--socket", socket, "status"])
        #expect(status.status == 0, "another uid still gets in: \(status.output)")
        for client in held { await client.close() }
    }

    /// `ping` with two real uids and `feature_allow`: the uid with a feature gets past the
    /// check (the device is unknown), the uid without one gets `not-permitted` naming ping.
    @Test(.enabled(if: ready, TestAccounts.skipComment))
    func pingNeedsAFeatureRightOrTheControlRole() async throws {
        let accounts = try TestAccounts()
        defer { accounts.removeAll() }
        let tag = "\(getpid() % 100_000)"
        let socketGroup = "smsock\(tag)"
        let socketGID = try accounts.group(socketGroup)
        let allowed = try accounts.user("smfea\(tag)", supplementary: [socketGroup])
        let other = try accounts.user("smnon\(tag)", supplementary: [socketGroup])
        let folder = try TemporaryFolder.make()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        #expect(chmod(folder, 0o755) == 0)
        let socket = folder + "/meshd.sock"
        try "socket_mode = \"0660\"\nfeature_allow = [\"\(allowed.uid):notes\"]\n"
            .write(toFile: folder + "/meshd.toml", atomically: true, encoding: .utf8)
        let meshd = try ChildProcess("meshd", ["--config", folder + "/meshd.toml", "--state-dir", folder + "/state",
                                               "--socket", socket, "--listen", "127.0.0.1:0", "--no-mdns", "--log-level", "error"])
        defer { meshd.terminate(); meshd.process.waitUntilExit() }
        try await Self.waitForSocket(socket)
        #expect(chown(socket, uid_t.max, socketGID) == 0)

        let withFeature = try await Self.run(["--reuid=\(allowed.uid)", "--regid=\(allowed.gid)", "--init-groups"],
                                             meshctl: ["--socket", socket, "ping", "ABCDEFG", "--count", "1"])
        #expect(withFeature.status == 1 && withFeature.output.contains("no paired device matches"), "\(withFeature.output)")
        let without = try await Self.run(["--reuid=\(other.uid)", "--regid=\(other.gid)", "--init-groups"],
                                         meshctl: ["--socket", socket, "ping", "ABCDEFG", "--count", "1"])
        #expect(without.status == 1 && without.output.contains("not permitted: ping probes the paired devices and uid \(other.uid) may not"),
                "\(without.output)")
        let root = try await DaemonProcess.run("meshctl", ["--socket", socket, "ping", "ABCDEFG", "--count", "1"], timeout: 10)
        #expect(root.output.contains("no paired device matches"), "root holds the control role: \(root.output)")
    }

    private static func run(_ identity: [String], meshctl arguments: [String]) async throws -> (status: Int32, output: String) {
        let meshctl = try #require(ChildProcess.executable("meshctl"))
        return try await DaemonProcess.run("/usr/bin/setpriv", identity + [meshctl] + arguments, timeout: 15)
    }

    private static func run(_ identity: [String], python arguments: [String]) async throws -> (status: Int32, output: String) {
        let python = try #require(Self.python)
        return try await DaemonProcess.run("/usr/bin/setpriv", identity + [python, "-c", request] + arguments, timeout: 15)
    }

    private static func waitForSocket(_ path: String) async throws {
        try await waitUntil("meshd answers on \(path)", timeout: 10) {
            try await DaemonProcess.run("meshctl", ["--socket", path, "status"], timeout: 5).status == 0
        }
    }
}
