#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MeshCrypto
import SessionMeshClient
import Testing

/// `meshctl` given input a person gets wrong: a payload larger than a message can carry (or an
/// endless stdin), an empty device ID, a send while no device is paired yet.
@Suite("meshctl input", .serialized,
       .enabled(if: ChildProcess.executable("meshd") != nil && ChildProcess.executable("meshctl") != nil, "meshd/meshctl are not built"))
struct MeshctlInputTests {
    /// Runs meshctl with `stdin` as its standard input; returns status, stdout and stderr.
    static func meshctl(_ daemon: DaemonProcess, _ arguments: [String], stdin: FileHandle,
                        timeout: Double = 10) async throws -> (status: Int32, stdout: String, stderr: String) {
        guard let path = ChildProcess.executable("meshctl") else { throw DaemonProcessError("meshctl is not built") }
        return try await blocking {
            let process = Process()
            let out = Pipe(), err = Pipe()
            process.executableURL = URL(fileURLWithPath: path)
            process.arguments = ["--socket", daemon.socketPath] + arguments
            process.standardInput = stdin
            process.standardOutput = out
            process.standardError = err
            try process.run()
            let stdout = PipeReader.readToEnd(out.fileHandleForReading, timeout: timeout)
            let stderr = PipeReader.readToEnd(err.fileHandleForReading, timeout: 1)
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
            return (process.terminationStatus, String(decoding: stdout, as: UTF8.self), String(decoding: stderr, as: UTF8.self))
        }
    }

    @Test func anEndlessOrHugeStdinPayloadIsRefusedAtOnceAndTheDaemonKeepsServing() async throws {
        let daemon = try await DaemonProcess(name: "alpha")
        defer { daemon.stopNow() }
        let endless = try #require(FileHandle(forReadingAtPath: "/dev/zero"))
        let started = Date()
        let result = try await Self.meshctl(daemon, ["send", "--feature", "demo", "-"], stdin: endless)
        #expect(result.status == 2, "\(result)")
        #expect(result.stderr.contains("the payload is larger than 1048576 bytes"), "\(result.stderr)")
        #expect(Date().timeIntervalSince(started) < 8, "meshctl must stop reading at the limit")
        let json = try await Self.meshctl(daemon, ["send", "--feature", "demo", "--json", "-"], stdin: endless)
        #expect(json.status == 2 && json.stdout.contains(#""code":"invalid-argument""#), "\(json)")
        #expect(try await daemon.meshctl(["status"]).status == 0)
    }

    @Test func aSendWithNoPairedDeviceSaysNothingWasSent() async throws {
        let daemon = try await DaemonProcess(name: "alpha")
        defer { daemon.stopNow() }
        let empty = try #require(FileHandle(forReadingAtPath: "/dev/null"))
        let reliable = try await Self.meshctl(daemon, ["send", "--feature", "demo", "--json", "hello"], stdin: empty)
        #expect(reliable.status == 0)
        #expect(reliable.stdout.contains(#""outcome":"sent""#) && reliable.stdout.contains(#""peers":0"#), "\(reliable.stdout)")
        let text = try await Self.meshctl(daemon, ["send", "--feature", "demo", "-"], stdin: empty)
        #expect(text.status == 0)
        #expect(text.stderr.contains("no paired devices, so nothing was sent"), "\(text.stderr)")
        #expect(try await daemon.meshctl(["queue", "--json"]).output.contains(#"{"items":[]}"#))
    }

    /// A revision the store cannot hold is the caller's mistake: invalid-argument naming the
    /// value, not "the daemon's durable store failed".
    @Test func aRevisionAboveTheStorableRangeIsAnInvalidArgument() async throws {
        let daemon = try await DaemonProcess(name: "alpha")
        defer { daemon.stopNow() }
        let result = try await daemon.meshctl(["send", "--feature", "demo", "--mode", "snapshot", "--json",
                                               "--revision", "18446744073709551615", "x"])
        #expect(result.status == 1)
        #expect(result.output.contains(#""code":"invalid-argument""#)
                && result.output.contains("revision 18446744073709551615 is above the largest storable value"), "\(result.output)")
        #expect(try await daemon.meshctl(["send", "--feature", "demo", "--mode", "snapshot", "--revision", "7", "x"]).status == 0)
    }

    /// Text that apps and peers choose (session owner and status, feature IDs) cannot drive the
    /// user's terminal: control characters print as `\u{1B}`.
    @Test func terminalEscapesInSessionFieldsAreShownNotObeyed() async throws {
        let daemon = try await DaemonProcess(name: "alpha")
        defer { daemon.stopNow() }
        let client = try await MeshClient.connect(socketPath: daemon.socketPath)
        try await client.announceSession(sessionID: UUID(), featureID: "demo\u{1B}[31m", owner: "evil\u{1B}]0;title\u{07}",
                                          status: "running\r\nforged line")
        await client.close()
        let result = try await daemon.meshctl(["sessions"])
        #expect(result.status == 0)
        #expect(!result.output.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x07 || $0 == "\r" }, "\(result.output)")
        #expect(result.output.contains("evil\\u{1B}]0;title\\u{7}") && result.output.contains("running\\u{D}\\u{A}forged line"), "\(result.output)")
    }

    @Test func anEmptyPeerIsAUsageError() async throws {
        let daemon = try await DaemonProcess(name: "alpha")
        defer { daemon.stopNow() }
        let result = try await daemon.meshctl(["snapshot", "get", "--feature", "demo", "--peer", ""])
        #expect(result.status == 2 && result.output.contains("--peer must be a device ID"), "\(result.output)")
        // Before: exit 1 with the daemon's "unpair: deviceID must be 1 to 256 characters".
        for command in [["unpair", ""], ["ping", " "]] {
            let empty = try await daemon.meshctl(command)
            #expect(empty.status == 2 && empty.output.contains("<device> must be a device ID, as `meshctl peers` shows it"), "\(empty.output)")
        }
    }

    /// `sessions --feature` takes a feature like every other command: an empty or over-long one
    /// is a usage error (before: "no sessions", as if the feature had none).
    @Test func anEmptyOrOverlongSessionsFeatureIsAUsageError() async throws {
        let daemon = try await DaemonProcess(name: "alpha")
        defer { daemon.stopNow() }
        for feature in ["", String(repeating: "f", count: 256)] {
            let result = try await daemon.meshctl(["sessions", "--feature", feature])
            #expect(result.status == 2 && result.output.contains("--feature must be 1–255 bytes"), "\(result)")
        }
        #expect(try await daemon.meshctl(["sessions", "--feature", "demo"]).output == "no sessions\n")
    }

    /// A negative number given to a numeric option is named as a bad value, not taken for an
    /// option and reported as "Missing value for '--count'" (as if the number had been left out).
    @Test(arguments: [
        (["ping", "ABCDEFG", "--count", "-5"], "--count must be between 1 and 10000"),
        (["pair", "--expires", "-5"], "--expires must be between 1 and 3600 seconds"),
        (["watch", "--feature", "demo", "--limit", "-1"], "--limit must be at least 1"),
        (["watch", "--feature", "demo", "--reconnect", "-1"], "--reconnect must be 0.1–3600 seconds"),
        (["send", "--feature", "demo", "--sequence", "-1", "x"], "The value '-1' is invalid for '--sequence <N>'"),
        (["send", "--feature", "demo", "--mode", "snapshot", "--revision", "-1", "x"], "The value '-1' is invalid for '--revision <N>'"),
    ])
    func aNegativeNumberIsABadValueNotAMissingOne(arguments: [String], message: String) async throws {
        let result = try await DaemonProcess.run("meshctl", ["--socket", "/nonexistent/meshd.sock"] + arguments)
        #expect(result.status == 2, "\(result)")
        #expect(result.output.contains(message) && !result.output.contains("Missing value"), "\(result.output)")
    }

    /// A payload within the 1 MiB a message can carry whose envelope (metadata included) is not:
    /// refused by meshctl before anything is written, as a usage error that says so. Before, the
    /// daemon closed the connection (frame-too-large) and meshctl exited 1 with "frame body of
    /// 1048654 bytes exceeds the maximum of 1048576 bytes".
    /// 1 048 400 bytes fit the send frame but not the event frame on the receiving side.
    @Test(arguments: ["reliable", "snapshot"], [1_048_576, 1_048_400])
    func aPayloadWhoseMessageIsOverTheFrameLimitIsAUsageError(mode: String, size: Int) async throws {
        let daemon = try await DaemonProcess(name: "alpha")
        defer { daemon.stopNow() }
        let file = daemon.folder + "/payload"
        try Data(repeating: 0x61, count: size).write(to: URL(fileURLWithPath: file))
        let text = try await Self.meshctl(daemon, ["send", "--feature", "demo", "--mode", mode, "-"],
                                          stdin: try #require(FileHandle(forReadingAtPath: file)))
        #expect(text.status == 2, "\(text)")
        #expect(text.stderr.contains("bytes one local API frame may carry; send a smaller payload"), "\(text.stderr)")
        let json = try await Self.meshctl(daemon, ["send", "--feature", "demo", "--mode", mode, "--json", "-"],
                                          stdin: try #require(FileHandle(forReadingAtPath: file)))
        #expect(json.status == 2 && json.stdout.contains(#""code":"invalid-argument""#), "\(json)")
        #expect(try await daemon.meshctl(["status"]).status == 0)
        #expect(try await daemon.status()["counters"].map { ($0 as? [String: Any])?["api.malformed"] as? Int } == 0,
                "nothing over the limit reached the daemon")
    }

    /// Without `--socket` and with no daemon running, meshctl names both sockets it looked for
    /// (the user daemon's and the system one's), not only the system one's: someone who started
    /// `meshd --user` (`make run`) was told about /run/sessionmesh/meshd.sock, which they never used.
    @Test(.enabled(if: !FileManager.default.fileExists(atPath: "/run/sessionmesh/meshd.sock"), "a system meshd runs here"))
    func withoutADaemonTheDefaultSocketsAreBothNamed() async throws {
        let home = try TemporaryFolder.make()
        defer { try? FileManager.default.removeItem(atPath: home) }
        let result = try await DaemonProcess.run("meshctl", ["status"], timeout: 10, environment: ["HOME": home, "PATH": "/usr/bin:/bin"])
        #expect(result.status == 3, "\(result)")
        #expect(result.output.contains("cannot reach meshd: no socket file (is meshd running? looked for the user daemon's \(home)/.local/state/sessionmesh/meshd.sock and the system daemon's /run/sessionmesh/meshd.sock; --socket PATH names another)"),
                "\(result.output)")
    }

    /// `--socket ""` (an unset shell variable) is a usage error, not "no socket file (… socket )".
    @Test func anEmptySocketIsAUsageError() async throws {
        let result = try await DaemonProcess.run("meshctl", ["--socket", "", "status"])
        #expect(result.status == 2, "\(result)")
        #expect(result.output.contains("--socket is empty; give the daemon's socket path, or leave the option out for the default"), "\(result.output)")
    }

    /// `meshctl pair CODE` without --address on a daemon started with --no-mdns answers
    /// discovery-off at once (docs/LOCAL-API.md), not after a 5 s "search over mDNS" it never
    /// made ("no device on this network shows a pairing code starting with …").
    @Test func pairingByCodeAloneWithMDNSOffSaysSoAtOnce() async throws {
        let daemon = try await DaemonProcess(name: "alpha", extraArguments: ["--no-mdns"])
        defer { daemon.stopNow() }
        let started = Date()
        let result = try await daemon.meshctl(["pair", PairingCode.generate().description, "--json"])
        #expect(result.status == 1, "\(result)")
        #expect(result.output.contains(#""code":"discovery-off""#) && result.output.contains("pass --address HOST:PORT"), "\(result.output)")
        #expect(Date().timeIntervalSince(started) < 3)
    }

    /// `meshctl pair CODE --address` with nothing listening there says so in a sentence (before:
    /// "Connection errors: SingleConnectionFailure(target: [IPv4]127.0.0.1/127.0.0.1:1, error:
    /// connection reset (error set): Connection refused) (errno: 111))").
    @Test func pairingWithAnAddressWhereNothingListensSaysSo() async throws {
        let daemon = try await DaemonProcess(name: "alpha", extraArguments: ["--no-mdns"])
        defer { daemon.stopNow() }
        let result = try await daemon.meshctl(["pair", PairingCode.generate().description, "--address", "127.0.0.1:1"])
        #expect(result.status == 1, "\(result)")
        #expect(result.output.contains("could not reach a SessionMesh daemon at 127.0.0.1:1: nothing is listening there (connection refused)"),
                "\(result.output)")
        #expect(!result.output.contains("errno"), "\(result.output)")
        // A malformed address says what is wrong with it (before: "'…' is not HOST:PORT").
        for (address, problem) in [("127.0.0.1:99999", "port must be a number from 1 to 65535"), ("127.0.0.1", "has no port")] {
            let bad = try await daemon.meshctl(["pair", PairingCode.generate().description, "--address", address])
            #expect(bad.status == 1 && bad.output.contains("--address: '\(address)'") && bad.output.contains(problem), "\(bad.output)")
        }
        #expect(try await daemon.meshctl(["status"]).status == 0)
    }

    /// `queue cancel` with an ID outside 1…Int64.max — above the largest item ID, zero, or
    /// negative — is a usage error naming the range (before: `-1` was read as an unknown option
    /// and reported as a missing ID); two IDs are refused, not one of them silently dropped.
    @Test func aQueueCancelIDOutsideTheRangeIsAUsageError() async throws {
        for word in ["9223372036854775808", "0", "-1", "1e3"] {
            let result = try await DaemonProcess.run("meshctl", ["--socket", "/nonexistent/meshd.sock", "queue", "cancel", word])
            #expect(result.status == 2, "\(word): \(result)")
            #expect(result.output.contains("'\(word)' is not a transfer ID: <id> is a number from 1 to 9223372036854775807, as `meshctl queue` shows it"),
                    "\(result.output)")
        }
        let two = try await DaemonProcess.run("meshctl", ["--socket", "/nonexistent/meshd.sock", "queue", "cancel", "3", "4"])
        #expect(two.status == 2 && two.output.contains("expected one transfer ID, got 2: 3 4"), "\(two)")
        let none = try await DaemonProcess.run("meshctl", ["--socket", "/nonexistent/meshd.sock", "queue", "cancel"])
        #expect(none.status == 2 && none.output.contains("Missing expected argument '<id>'"), "\(none)")
        // A valid ID gets past the parser: the daemon is what is missing (exit 3).
        let valid = try await DaemonProcess.run("meshctl", ["--socket", "/nonexistent/meshd.sock", "queue", "cancel", "42"])
        #expect(valid.status == 3, "\(valid)")
    }
}
