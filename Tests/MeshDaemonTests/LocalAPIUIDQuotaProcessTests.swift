#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing

/// Two real `meshd`, paired; B goes offline. Two real uids (created for the test) send reliable
/// items to B through A's socket with `meshctl send`: the first fills its share of A's outbox
/// (`uid_max_outbox_items`) and is refused with `queue-full` naming the share, while the second
/// uid's sends are still queued, and the refusal is counted.
@Suite("per-uid outbox share (real uids)", .serialized)
struct LocalAPIUIDQuotaProcessTests {
    static let ready = LocalAPIControlRoleProcessTests.ready

    @Test(.enabled(if: ready, TestAccounts.skipComment))
    func aUIDThatFillsItsShareForAnOfflineDeviceDoesNotStopAnotherUIDsSends() async throws {
        let accounts = try TestAccounts()
        defer { accounts.removeAll() }
        let tag = "\(getpid() % 100_000)"
        let socketGroup = "smqsk\(tag)"
        let socketGID = try accounts.group(socketGroup)
        let first = try accounts.user("smqa\(tag)", supplementary: [socketGroup])
        let second = try accounts.user("smqb\(tag)", supplementary: [socketGroup])
        let folder = try TemporaryFolder.make()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let share = 5
        try """
            socket_mode = "0660"
            outbox_max_items = 12
            uid_max_outbox_items = \(share)
            """.write(toFile: folder + "/meshd.toml", atomically: true, encoding: .utf8)
        let pair = try await DaemonPair.start(extraA: ["--config", folder + "/meshd.toml"])
        defer { pair.stopNow() }
        #expect(chmod(pair.a.folder, 0o755) == 0)
        #expect(chown(pair.a.socketPath, uid_t.max, socketGID) == 0)
        try await pair.b.kill9()

        let meshctl = try #require(ChildProcess.executable("meshctl"))
        func send(as user: (uid: uid_t, gid: gid_t), _ index: Int) async throws -> (status: Int32, output: String) {
            let identity = ["--reuid=\(user.uid)", "--regid=\(user.gid)", "--init-groups"]
            return try await DaemonProcess.run("/usr/bin/setpriv", identity + [
                meshctl, "--socket", pair.a.socketPath, "send", "--feature", "demo", "--mode", "reliable",
                "--session", UUID().uuidString, "--to", pair.idB, "item \(index)"], timeout: 15)
        }

        let clock = ContinuousClock(), started = clock.now
        for index in 0..<share {
            let result = try await send(as: first, index)
            #expect(result.status == 0 && result.output.contains("queued"), "send \(index): \(result.output)")
        }
        let refused = try await send(as: first, share)
        #expect(refused.status != 0, "\(refused.output)")
        #expect(refused.output.contains("queue-full") || refused.output.contains("full"), "\(refused.output)")
        #expect(refused.output.contains("outbox items per local uid = \(share)"), "\(refused.output)")
        #expect(refused.output.contains("uid \(first.uid)"), "\(refused.output)")
        // The other uid's sends still fit the outbox (to the same offline device).
        for index in 0..<share {
            let result = try await send(as: second, 100 + index)
            #expect(result.status == 0 && result.output.contains("queued"), "second uid, send \(index): \(result.output)")
        }
        let counters = try await pair.a.status()["counters"] as? [String: Any]
        #expect((counters?["delivery.outbox.uid_share_refused"] as? NSNumber)?.intValue == 1, "\(String(describing: counters))")
        let queue = try await pair.a.meshctl(["queue", "--json"])
        let listing = try JSONSerialization.jsonObject(with: Data(queue.output.utf8)) as? [String: Any]
        let queued = (listing?["items"] as? [Any])?.count ?? -1
        #expect(queued == 2 * share, "\(queue.output)")
        let elapsed = clock.now - started
        print("process figure: refusal: \(refused.output.trimmingCharacters(in: .whitespacesAndNewlines))")
        print("process figure: uid \(first.uid) refused after \(share) items (share \(share) of outbox 12); uid \(second.uid) "
              + "queued \(share) more; \(queued) items queued for the offline device; \(2 * share + 1) sends in \(elapsed)")
    }

    /// A uid publishing snapshots of ever new sessions in a loop stops at `uid_max_slots`; the
    /// database stays within its configured bound, another uid still publishes.
    @Test(.enabled(if: ready, TestAccounts.skipComment))
    func aUIDPublishingSlotsInALoopHitsItsShareAndTheDatabaseStaysBounded() async throws {
        let accounts = try TestAccounts()
        defer { accounts.removeAll() }
        let tag = "\(getpid() % 100_000)"
        let socketGroup = "smqsl\(tag)"
        let socketGID = try accounts.group(socketGroup)
        let looping = try accounts.user("smqc\(tag)", supplementary: [socketGroup])
        let other = try accounts.user("smqd\(tag)", supplementary: [socketGroup])
        let folder = try TemporaryFolder.make()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let share = 20, storeBound = 4 << 20
        try """
            socket_mode = "0660"
            uid_max_slots = \(share)
            store_max_bytes = \(storeBound)
            """.write(toFile: folder + "/meshd.toml", atomically: true, encoding: .utf8)
        let pair = try await DaemonPair.start(extraA: ["--config", folder + "/meshd.toml"])
        defer { pair.stopNow() }
        #expect(chmod(pair.a.folder, 0o755) == 0)
        #expect(chown(pair.a.socketPath, uid_t.max, socketGID) == 0)
        let meshctl = try #require(ChildProcess.executable("meshctl"))
        let payload = String(repeating: "s", count: 2000)
        func publish(as user: (uid: uid_t, gid: gid_t)) async throws -> (status: Int32, output: String) {
            let identity = ["--reuid=\(user.uid)", "--regid=\(user.gid)", "--init-groups"]
            return try await DaemonProcess.run("/usr/bin/setpriv", identity + [
                meshctl, "--socket", pair.a.socketPath, "send", "--feature", "demo", "--mode", "snapshot",
                "--session", UUID().uuidString, payload], timeout: 15)
        }

        var published = 0, refusal: String?
        for _ in 0..<(share + 10) {
            let result = try await publish(as: looping)
            if result.status != 0 {
                refusal = result.output
                break
            }
            published += 1
        }
        #expect(published == share, "published \(published)")
        let refused = try #require(refusal)
        #expect(refused.contains("outbound snapshot slots per local uid = \(share)") && refused.contains("uid \(looping.uid)"),
                "\(refused)")
        #expect(try await publish(as: looping).status != 0, "still refused")
        #expect(try await publish(as: other).status == 0, "another uid still publishes")
        let counters = try await pair.a.status()["counters"] as? [String: Any]
        #expect((counters?["delivery.slots.uid_share_refused"] as? NSNumber)?.intValue == 2, "\(String(describing: counters))")

        let database = pair.a.stateDirectory + "/delivery.sqlite"
        let size = { (path: String) in ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.intValue ?? 0 }
        let fileBytes = size(database), walBytes = size(database + "-wal")
        #expect(fileBytes > 0 && fileBytes <= storeBound, "database \(fileBytes) bytes")
        let status = (try? String(contentsOfFile: "/proc/\(pair.a.pid ?? 0)/status", encoding: .utf8)) ?? ""
        let rss = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") }.map(String.init) ?? "VmRSS: unknown"
        print("process figure: refusal: \(refused.trimmingCharacters(in: .whitespacesAndNewlines))")
        print("process figure: uid \(looping.uid) published \(published) slots of \(payload.count) bytes, then refused; database "
              + "\(fileBytes) bytes (+ WAL \(walBytes)) of store_max_bytes \(storeBound); meshd \(rss)")
    }

    /// As one uid: `socket feature count`: announces `count` new sessions, then sets anchors of
    /// `count` new sessions, each loop stopping at its first error; prints the figures as JSON.
    static let sessionLoop = """
        import json, socket, struct, sys, uuid
        def call(op, body):
            s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
            body = json.dumps(body).encode()
            s.sendall(struct.pack(">HBBHHII", 0x534D, 1, 1, op, 0, 7, len(body)) + body)
            data = b""
            while len(data) < 16 or len(data) < 16 + struct.unpack(">I", data[12:16])[0]:
                chunk = s.recv(65536)
                if not chunk: break
                data += chunk
            s.close()
            reply = json.loads(data[16:])
            return None if data[3] == 2 else reply["code"] + " " + reply["message"]
        feature, count = sys.argv[2], int(sys.argv[3])
        anchor = {"startedAt": 1800000000, "accumulatedElapsedBeforeAnchor": 0, "isPaused": False}
        out = {"announced": 0, "anchored": 0, "sessions": []}
        for i in range(count):
            sid = str(uuid.uuid4()).upper()
            error = call(0x0106, {"sessionID": sid, "featureID": feature, "owner": "loop", "status": "running"})
            if error: out["announceError"] = error; break
            out["announced"] += 1; out["sessions"].append(sid)
        for i in range(count):
            error = call(0x0105, {"sessionID": str(uuid.uuid4()).upper(), "featureID": feature, "revision": 1, "anchor": anchor})
            if error: out["anchorError"] = error; break
            out["anchored"] += 1
        if out["sessions"]:
            first = out["sessions"][0]
            out["reannounce"] = call(0x0106, {"sessionID": first, "featureID": feature, "owner": "loop", "status": "paused"})
            out["closeExisting"] = call(0x0107, {"sessionID": first, "featureID": feature})
        out["closeNew"] = call(0x0107, {"sessionID": str(uuid.uuid4()).upper(), "featureID": feature})
        for key in ("announceNew", "announceAgain"):
            out[key] = call(0x0106, {"sessionID": str(uuid.uuid4()).upper(), "featureID": feature, "owner": "loop", "status": "running"})
        print(json.dumps(out))
        """

    /// A uid announcing new sessions and setting anchors of new sessions in a loop stops at
    /// `uid_max_sessions` and `uid_max_anchors` with `queue-full` naming the uid and the key,
    /// while updating and closing its existing rows still works and another uid still creates rows.
    @Test(.enabled(if: ready, TestAccounts.skipComment))
    func aUIDAnnouncingSessionsAndSettingAnchorsInALoopHitsItsSharesWhileAnotherUIDStillCan() async throws {
        let accounts = try TestAccounts()
        defer { accounts.removeAll() }
        let tag = "\(getpid() % 100_000)"
        let socketGroup = "smqss\(tag)"
        let socketGID = try accounts.group(socketGroup)
        let looping = try accounts.user("smqe\(tag)", supplementary: [socketGroup])
        let other = try accounts.user("smqf\(tag)", supplementary: [socketGroup])
        let folder = try TemporaryFolder.make()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let sessionShare = 8, anchorShare = 6, attempts = 15
        try """
            socket_mode = "0660"
            uid_max_sessions = \(sessionShare)
            uid_max_anchors = \(anchorShare)
            """.write(toFile: folder + "/meshd.toml", atomically: true, encoding: .utf8)
        let pair = try await DaemonPair.start(extraA: ["--config", folder + "/meshd.toml"])
        defer { pair.stopNow() }
        #expect(chmod(pair.a.folder, 0o755) == 0)
        #expect(chown(pair.a.socketPath, uid_t.max, socketGID) == 0)
        let python = try #require(LocalAPIControlRoleProcessTests.python)
        func loop(as user: (uid: uid_t, gid: gid_t), count: Int) async throws -> [String: Any] {
            let identity = ["--reuid=\(user.uid)", "--regid=\(user.gid)", "--init-groups"]
            let result = try await DaemonProcess.run("/usr/bin/setpriv", identity + [python, "-c", Self.sessionLoop, pair.a.socketPath,
                                                                                     "demo", "\(count)"], timeout: 60)
            let line = result.output.split(separator: "\n").last.map(String.init) ?? ""
            return try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(result.output)")
        }

        let clock = ContinuousClock(), started = clock.now
        let figures = try await loop(as: looping, count: attempts)
        let elapsed = clock.now - started
        let announced = figures["announced"] as? Int ?? -1, anchored = figures["anchored"] as? Int ?? -1
        let announceError = figures["announceError"] as? String ?? "", anchorError = figures["anchorError"] as? String ?? ""
        #expect(announced == sessionShare, "\(figures)")
        #expect(announceError.hasPrefix("queue-full") && announceError.contains("uid \(looping.uid)")
                && announceError.contains("session rows per local uid = \(sessionShare)") && announceError.contains("uid_max_sessions"),
                "\(announceError)")
        #expect(anchored == anchorShare, "\(figures)")
        #expect(anchorError.hasPrefix("queue-full") && anchorError.contains("uid \(looping.uid)")
                && anchorError.contains("timer anchors per local uid = \(anchorShare)") && anchorError.contains("uid_max_anchors"),
                "\(anchorError)")
        // Its existing rows still take updates and a close. A closed session makes room: closing
        // a new one forgets it (and leaves a closed row), announcing a new one forgets that; with
        // every row open again, the next new session is refused.
        #expect(figures["reannounce"] is NSNull, "\(figures)")
        #expect(figures["closeExisting"] is NSNull, "\(figures)")
        #expect(figures["closeNew"] is NSNull, "\(figures)")
        #expect(figures["announceNew"] is NSNull, "\(figures)")
        #expect((figures["announceAgain"] as? String)?.hasPrefix("queue-full") == true, "\(figures)")

        let others = try await loop(as: other, count: 3)
        #expect(others["announced"] as? Int == 3 && others["anchored"] as? Int == 3, "another uid still can: \(others)")
        #expect(others["closeNew"] is NSNull && others["announceNew"] is NSNull && others["announceAgain"] is NSNull, "\(others)")
        let counters = try await pair.a.status()["counters"] as? [String: Any]
        let sessionsRefused = (counters?["delivery.sessions.uid_share_refused"] as? NSNumber)?.intValue
        let anchorsRefused = (counters?["delivery.anchors.uid_share_refused"] as? NSNumber)?.intValue
        #expect(sessionsRefused == 2 && anchorsRefused == 1, "\(String(describing: counters))")
        let summary = try await pair.a.meshctl(["status"])
        #expect(summary.output.contains("share of the session rows was full"), "\(summary.output)")
        print("process figure: refusals: \(announceError) | \(anchorError)")
        print("process figure: uid \(looping.uid) announced \(announced) sessions (uid_max_sessions \(sessionShare)) and set "
              + "\(anchored) anchors (uid_max_anchors \(anchorShare)) of \(attempts) attempts each in \(elapsed), then refused; uid "
              + "\(other.uid) then announced 3, set 3 and closed a new session; counters sessions \(sessionsRefused ?? -1), anchors "
              + "\(anchorsRefused ?? -1)")
    }
}
