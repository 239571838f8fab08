#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing

/// Two real `meshd`, paired, with `feature_allow` giving one real uid (created for the test)
/// feature `alpha` and another feature `beta`. The beta uid's session, anchor and watermark
/// cannot be closed, announced over, anchored or watermarked by the alpha uid naming the
/// session's ID: every attempt fails with `feature-not-allowed` and neither device's directory
/// changes.
@Suite("feature lanes (real uids)", .serialized)
struct LocalAPIFeatureLaneProcessTests {
    static let python = LocalAPIControlRoleProcessTests.python
    static let ready = LocalAPIControlRoleProcessTests.ready

    /// One data request over the local API: `socket op-code json`; prints `ok BODY` or `error CODE MESSAGE`.
    static let request = """
        import json, socket, struct, sys
        s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
        body = sys.argv[3].encode()
        s.sendall(struct.pack(">HBBHHII", 0x534D, 1, 1, int(sys.argv[2], 16), 0, 7, len(body)) + body)
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
    func aUIDOfOneFeatureCannotReachAnotherFeaturesSessionByItsID() async throws {
        let accounts = try TestAccounts()
        defer { accounts.removeAll() }
        let tag = "\(getpid() % 100_000)"
        let socketGroup = "smlsk\(tag)"
        let socketGID = try accounts.group(socketGroup)
        let alpha = try accounts.user("smla\(tag)", supplementary: [socketGroup])
        let beta = try accounts.user("smlb\(tag)", supplementary: [socketGroup])
        let folder = try TemporaryFolder.make()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try """
            socket_mode = "0660"
            feature_allow = ["\(alpha.uid):alpha", "\(beta.uid):beta"]
            """.write(toFile: folder + "/meshd.toml", atomically: true, encoding: .utf8)
        let pair = try await DaemonPair.start(extraA: ["--config", folder + "/meshd.toml"], extraB: ["--config", folder + "/meshd.toml"])
        defer { pair.stopNow() }
        for daemon in [pair.a, pair.b] {
            #expect(chmod(daemon.folder, 0o755) == 0)
            #expect(chown(daemon.socketPath, uid_t.max, socketGID) == 0)
        }
        let asAlpha = ["--reuid=\(alpha.uid)", "--regid=\(alpha.gid)", "--init-groups"]
        let asBeta = ["--reuid=\(beta.uid)", "--regid=\(beta.gid)", "--init-groups"]
        func call(_ identity: [String], _ daemon: DaemonProcess, _ op: String, _ body: String) async throws -> String {
            let python = try #require(Self.python)
            return try await DaemonProcess.run("/usr/bin/setpriv", identity + [python, "-c", Self.request, daemon.socketPath, op, body],
                                               timeout: 15).output
        }
        func sessions(_ daemon: DaemonProcess) async throws -> [[String: Any]] {
            let result = try await daemon.meshctl(["sessions", "--json"])
            let object = try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: Any]
            return object?["sessions"] as? [[String: Any]] ?? []
        }
        func row(_ daemon: DaemonProcess, _ session: UUID) async throws -> [String] {
            try await sessions(daemon).filter { ($0["sessionID"] as? String)?.uppercased() == session.uuidString }
                .map { "\($0["featureID"] ?? "?")/\($0["status"] ?? "?")/\($0["revision"] ?? "?")" }.sorted()
        }
        let anchor = #"{"startedAt": 1800000000, "accumulatedElapsedBeforeAnchor": 0, "isPaused": false}"#

        // The beta uid's session, anchor and watermark, replicated to B.
        let session = UUID(), id = session.uuidString
        #expect(try await call(asBeta, pair.a, "0106", #"{"sessionID":"\#(id)","featureID":"beta","owner":"b","status":"running"}"#)
                .hasPrefix("ok"))
        #expect(try await call(asBeta, pair.a, "0105", #"{"sessionID":"\#(id)","featureID":"beta","revision":1,"anchor":\#(anchor)}"#)
                .hasPrefix("ok {\"stored\": true}"))
        #expect(try await call(asBeta, pair.a, "010C", #"{"sessionID":"\#(id)","featureID":"beta","peer":"\#(pair.idB)","sequence":5}"#)
                .hasPrefix("ok"))
        _ = try await eventually("B has the beta session", timeout: 10) { try await row(pair.b, session) == ["beta/running/1"] ? true : nil }

        // The alpha uid naming that session: as its own feature, and as beta.
        let attempts: [(String, String)] = [
            ("0107", #"{"sessionID":"\#(id)","featureID":"alpha"}"#),
            ("0107", #"{"sessionID":"\#(id)","featureID":"beta"}"#),
            ("0106", #"{"sessionID":"\#(id)","featureID":"alpha","owner":"a","status":"hijacked"}"#),
            ("0105", #"{"sessionID":"\#(id)","featureID":"alpha","revision":9,"anchor":\#(anchor)}"#),
            ("0105", #"{"sessionID":"\#(id)","featureID":"beta","revision":9,"anchor":\#(anchor)}"#),
            ("010C", #"{"sessionID":"\#(id)","featureID":"alpha","peer":"\#(pair.idB)","sequence":99}"#),
            ("010C", #"{"sessionID":"\#(id)","featureID":"beta","peer":"\#(pair.idB)","sequence":99}"#),
        ]
        let clock = ContinuousClock(), started = clock.now
        var refused = 0
        for (op, body) in attempts {
            let reply = try await call(asAlpha, pair.a, op, body)
            #expect(reply.hasPrefix("error feature-not-allowed"), "\(op) \(body): \(reply)")
            if reply.hasPrefix("error feature-not-allowed") { refused += 1 }
        }
        let elapsed = clock.now - started

        // A later beta session reaches B after anything the attempts could have sent: then both
        // directories still hold exactly the beta row, unchanged.
        let marker = UUID()
        #expect(try await call(asBeta, pair.a, "0106", #"{"sessionID":"\#(marker.uuidString)","featureID":"beta","owner":"b","status":"x"}"#)
                .hasPrefix("ok"))
        _ = try await eventually("B has the marker session", timeout: 10) { try await row(pair.b, marker).isEmpty ? nil : true }
        #expect(try await row(pair.a, session) == ["beta/running/1"])
        #expect(try await row(pair.b, session) == ["beta/running/1"])
        // The beta uid itself still closes its session.
        #expect(try await call(asBeta, pair.a, "0107", #"{"sessionID":"\#(id)","featureID":"beta"}"#).hasPrefix("ok"))
        _ = try await eventually("B sees the close", timeout: 10) { try await row(pair.b, session) == ["beta/closed/2"] ? true : nil }
        print("process figure: \(refused) of \(attempts.count) cross-feature attempts refused with feature-not-allowed in \(elapsed)")
    }
}
