import Foundation
import Testing

/// The device set with real meshd processes on loopback (no mDNS): devices paired with one
/// member only reach every member, a broadcast reaches each once, and `meshctl unpair` on a
/// member that never paired with the removed device removes it everywhere.
@Suite("device set with real daemons", .serialized,
       .enabled(if: ChildProcess.executable("meshd") != nil && ChildProcess.executable("meshctl") != nil, "meshd/meshctl are not built"))
struct DeviceSetProcessTests {
    /// Daemons named `names` on loopback without mDNS, and their device IDs.
    static func start(_ names: [String]) async throws -> (daemons: [DaemonProcess], ids: [String]) {
        var daemons: [DaemonProcess] = []
        do {
            for name in names { daemons.append(try await DaemonProcess(name: name, extraArguments: ["--no-mdns"])) }
            var ids: [String] = []
            for daemon in daemons { ids.append(try await daemon.deviceID()) }
            return (daemons, ids)
        } catch {
            for daemon in daemons { daemon.stopNow() }
            throw error
        }
    }

    /// Waits until `daemon` has an active channel to every device in `ids`; returns seconds.
    static func waitForChannels(_ daemon: DaemonProcess, to ids: [String], timeout: Double) async throws -> Double {
        var longest = 0.0
        for id in ids { longest = max(longest, try await daemon.waitForChannel(id, timeout: timeout)) }
        return longest
    }

    static func setStatus(_ daemon: DaemonProcess) async throws -> [String: Any] {
        try #require(try await daemon.status()["deviceSet"] as? [String: Any], "status carries deviceSet")
    }

    @Test func fourDaemonsPairedWithOneMemberFormOneSetAndARemovalReachesEveryone() async throws {
        let (daemons, ids) = try await Self.start(["alpha", "beta", "gamma", "delta"])
        defer { for daemon in daemons { daemon.stopNow() } }
        let (a, b, c, d) = (daemons[0], daemons[1], daemons[2], daemons[3])

        for other in [b, c, d] { _ = try await a.pair(with: other) }
        let started = Date()
        for (index, daemon) in daemons.enumerated() {
            _ = try await Self.waitForChannels(daemon, to: ids.enumerated().filter { $0.offset != index }.map(\.element), timeout: 10)
        }
        let allActive = Date().timeIntervalSince(started)
        print("device set: all 6 channels active \(String(format: "%.2f", allActive)) s after the last pairing")
        #expect(allActive < 10)
        for daemon in daemons {
            let set = try await Self.setStatus(daemon)
            #expect(set["size"] as? Int == 4, "\(daemon.name): \(set)")
        }
        let peersOfB = try await b.peers()
        let gammaOnB = try #require(peersOfB.first { $0["deviceID"] as? String == ids[2] })
        #expect(gammaOnB["joined"] as? String == "added by alpha", "\(gammaOnB)")
        let alphaOnB = try #require(peersOfB.first { $0["deviceID"] as? String == ids[0] })
        #expect(alphaOnB["joined"] as? String == "paired here", "\(alphaOnB)")

        // A reliable item to every member reaches each of the others once.
        var watches: [WatchProcess] = []
        defer { for watch in watches { watch.stopNow() } }
        for daemon in [a, b, c] {
            let watch = try WatchProcess(daemon, feature: "set")
            watches.append(watch)
            _ = try await watch.next(type: "attached", timeout: 10)
        }
        let sent = try await d.meshctl(["send", "--feature", "set", "--mode", "reliable", "to-everyone"])
        #expect(sent.status == 0, "\(sent.output)")
        for (index, watch) in watches.enumerated() {
            let envelope = try await watch.next(type: "envelope", timeout: 10)
            #expect(envelope["payload"] as? String == "to-everyone", "\(daemons[index].name): \(envelope)")
            #expect(envelope["from"] as? String == ids[3])
        }

        // B is removed on C, which never paired with it: every member forgets it, B is told.
        let unpaired = try await c.meshctl(["unpair", ids[1]])
        #expect(unpaired.status == 0, "\(unpaired.output)")
        for (index, daemon) in daemons.enumerated() where index != 1 {
            try await waitUntil("\(daemon.name) forgets beta", timeout: 10) {
                try await daemon.peers().allSatisfy { $0["deviceID"] as? String != ids[1] }
            }
            #expect(try await Self.setStatus(daemon)["size"] as? Int == 3)
        }
        try await waitUntil("beta reports its removal", timeout: 10) {
            try await Self.setStatus(b)["removed"] as? Bool == true
        }
        // Nothing sent after the removal reaches B; the others still get it.
        let bWatch = try WatchProcess(b, feature: "set")
        defer { bWatch.stopNow() }
        _ = try await bWatch.next(type: "attached", timeout: 10)
        let after = try await d.meshctl(["send", "--feature", "set", "--mode", "reliable", "after-removal"])
        #expect(after.status == 0, "\(after.output)")
        for index in [0, 2] {
            let envelope = try await watches[index].next(type: "envelope", timeout: 10)
            #expect(envelope["payload"] as? String == "after-removal")
        }
        #expect(try await bWatch.next(timeout: 3).map { $0["type"] as? String } != "envelope")
    }

    @Test func aDeviceRemovedWhileOfflineLearnsItAtItsNextContact() async throws {
        let (daemons, ids) = try await Self.start(["alpha", "beta", "gamma"])
        defer { for daemon in daemons { daemon.stopNow() } }
        let (a, b, c) = (daemons[0], daemons[1], daemons[2])
        _ = try await a.pair(with: b)
        _ = try await a.pair(with: c)
        _ = try await Self.waitForChannels(b, to: [ids[0], ids[2]], timeout: 10)

        try await b.terminate()
        let unpaired = try await c.meshctl(["unpair", ids[1]])
        #expect(unpaired.status == 0, "\(unpaired.output)")
        try await waitUntil("alpha forgets beta", timeout: 10) {
            try await a.peers().allSatisfy { $0["deviceID"] as? String != ids[1] }
        }
        try await b.restart()
        try await waitUntil("beta reports its removal after restarting", timeout: 20) {
            try await Self.setStatus(b)["removed"] as? Bool == true
        }
        #expect(try await b.peers().isEmpty, "a removed device forgets the set's members")
        let status = try await b.meshctl(["status"])
        #expect(status.output.contains("removed"), "\(status.output)")
    }

    @Test func aSinglePairingStaysOutOfTheSet() async throws {
        let (daemons, ids) = try await Self.start(["alpha", "beta", "gamma"])
        defer { for daemon in daemons { daemon.stopNow() } }
        let (a, b, c) = (daemons[0], daemons[1], daemons[2])
        _ = try await a.pair(with: b)
        _ = try await Self.waitForChannels(a, to: [ids[1]], timeout: 10)
        try await waitUntil("alpha and beta form a set", timeout: 10) { try await Self.setStatus(a)["size"] as? Int == 2 }

        let recordsBefore = try #require(try await Self.setStatus(a)["records"] as? Int)
        // Gamma pairs with beta with --single on the joining side only.
        let waiter = try ChildProcess("meshctl", ["--socket", b.socketPath, "pair", "--json"])
        defer { waiter.terminate(); waiter.process.waitUntilExit() }
        let line = try #require(try await waiter.readLine(timeout: 10))
        let code = try #require((try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["code"] as? String)
        let joined = try await c.meshctl(["pair", "-", "--single", "--address", b.listen], stdin: code + "\n")
        #expect(joined.status == 0, "\(joined.output)")
        _ = try await b.waitForChannel(ids[2], timeout: 10)
        // Beta has gamma's genesis once gamma answered its head (beta proposes a join only then),
        // and alpha holds everything beta holds: whatever beta would pass on has reached alpha.
        try await waitUntil("beta has gamma's records and alpha all of beta's", timeout: 10) {
            let onB = try await Self.setStatus(b), onA = try await Self.setStatus(a)
            return (onB["records"] as? Int ?? 0) > recordsBefore && onA["digest"] as? String == onB["digest"] as? String
        }
        #expect(try await Self.setStatus(c)["size"] as? Int == 1, "gamma declined to join")
        #expect(try await a.peers().allSatisfy { $0["deviceID"] as? String != ids[2] }, "a --single pairing is not passed on")
        #expect(try await Self.setStatus(b)["size"] as? Int == 2)
        let gammaOnB = try #require(try await b.peers().first { $0["deviceID"] as? String == ids[2] })
        #expect(gammaOnB["joined"] as? String == "paired here (single)", "\(gammaOnB)")

        // Unpairing it on beta forgets it there only; alpha and beta stay a set.
        #expect(try await b.meshctl(["unpair", ids[2]]).status == 0)
        try await waitUntil("gamma forgets beta", timeout: 10) { try await c.peers().isEmpty }
        #expect(try await Self.setStatus(a)["size"] as? Int == 2)
        #expect(try await Self.setStatus(b)["removed"] as? Bool == false)
    }
}
