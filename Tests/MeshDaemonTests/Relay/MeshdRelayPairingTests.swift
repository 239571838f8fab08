import Foundation
import MeshCrypto
import Testing

/// Two `meshd` on loopback with no way to find each other directly (no mDNS, no `--address`)
/// but a shared real Mosquitto: `meshctl pair -` pairs them by code through the broker's
/// rendezvous, the channel then comes up on the relay and carries a reliable item; a wrong code
/// costs the inviter one failed attempt and the right code still pairs after it; an
/// `--address` that cannot be reached falls back to the broker.
@Suite("meshd pairing through the relay broker", .serialized,
       .enabled(if: ChildProcess.executable("meshd") != nil && MosquittoBroker.shouldRun))
struct MeshdRelayPairingTests {
    @Test func pairsByCodeThroughTheBrokerAndTheChannelRunsOnTheRelay() async throws {
        let folder = try TemporaryFolder.make()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let broker = try MosquittoBroker(folder: folder, accounts: ["devA": "secret-a", "devB": "secret-b"])
        defer { broker.stop() }
        let a = try await DaemonProcess(name: "pair-relay-a", extraArguments: ["--no-mdns", "--relay", "mqtt://devA:secret-a@127.0.0.1:\(broker.port)"])
        defer { a.stopNow() }
        let b = try await DaemonProcess(name: "pair-relay-b", extraArguments: ["--no-mdns", "--relay", "mqtt://devB:secret-b@127.0.0.1:\(broker.port)"])
        defer { b.stopNow() }
        try await Self.waitForBroker(a)
        try await Self.waitForBroker(b)

        let started = Date()
        let (inviter, joined) = try await Self.pair(inviter: a, joiner: b)
        print("paired through the broker in \(String(format: "%.2f", Date().timeIntervalSince(started))) s")
        #expect(joined.status == 0, "\(joined.output)")
        #expect(joined.output.contains("paired through the relay broker"), "\(joined.output)")
        let paired = try #require(inviter["paired"] as? [String: Any], "\(inviter)")
        #expect(paired["via"] as? String == "relay", "\(paired)")
        let idA = try await a.deviceID(), idB = try await b.deviceID()
        #expect(paired["deviceID"] as? String == idB)

        try await a.waitForChannel(idB, timeout: 20)
        try await b.waitForChannel(idA, timeout: 10)
        let peer = try #require(try await b.peers().first { $0["deviceID"] as? String == idA })
        #expect((peer["path"] as? String)?.contains("relay") == true, "\(peer)")

        let watchA = try WatchProcess(a, feature: "demo")
        defer { watchA.stopNow() }
        _ = try await watchA.next(type: "attached", timeout: 10)
        let sent = try await b.meshctl(["send", "--feature", "demo", "--mode", "reliable", "paired-on-the-relay"])
        #expect(sent.status == 0, "\(sent.output)")
        let item = try await watchA.next(type: "envelope", timeout: 15)
        #expect(item["payload"] as? String == "paired-on-the-relay")
        #expect(item["from"] as? String == idB)
    }

    @Test func aWrongCodeCostsOneAttemptAndTheRightCodeStillPairs() async throws {
        let folder = try TemporaryFolder.make()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let broker = try MosquittoBroker(folder: folder, accounts: ["devA": "secret-a", "devB": "secret-b"])
        defer { broker.stop() }
        let a = try await DaemonProcess(name: "wrong-relay-a", extraArguments: ["--no-mdns", "--relay", "mqtt://devA:secret-a@127.0.0.1:\(broker.port)"])
        defer { a.stopNow() }
        let b = try await DaemonProcess(name: "wrong-relay-b", extraArguments: ["--no-mdns", "--relay", "mqtt://devB:secret-b@127.0.0.1:\(broker.port)"])
        defer { b.stopNow() }
        try await Self.waitForBroker(a)
        try await Self.waitForBroker(b)

        let (inviter, joined) = try await Self.pair(inviter: a, joiner: b) { code in
            let wrong = try #require(Self.wrongCode(sameHintAs: code))
            let attempt = try await b.meshctl(["pair", "-", "--json"], timeout: 25, stdin: wrong + "\n")
            #expect(attempt.status != 0, "\(attempt.output)")
            #expect(attempt.output.contains("pairing-failed"), "the inviter answered, the code did not match: \(attempt.output)")
            // The inviter counts it once the joiner's close reached it through the broker.
            try await waitUntil("the inviter counted the wrong code", timeout: 10) {
                (try await a.status()["counters"] as? [String: Any])?["pairing.attempts_failed"] as? Int == 1
            }
        }
        #expect(joined.status == 0, "the right code after a wrong one: \(joined.output)")
        let paired = try #require(inviter["paired"] as? [String: Any], "\(inviter)")
        #expect(paired["via"] as? String == "relay")
        let counters = try #require(try await a.status()["counters"] as? [String: Any])
        #expect(counters["pairing.attempts_failed"] as? Int == 1, "one wrong code, one failed attempt: \(counters)")
        #expect(counters["pairings.completed"] as? Int == 1, "\(counters)")
    }

    @Test func anAddressThatCannotBeReachedFallsBackToTheBroker() async throws {
        let folder = try TemporaryFolder.make()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let broker = try MosquittoBroker(folder: folder, accounts: ["devA": "secret-a", "devB": "secret-b"])
        defer { broker.stop() }
        let a = try await DaemonProcess(name: "fallback-relay-a", extraArguments: ["--no-mdns", "--relay", "mqtt://devA:secret-a@127.0.0.1:\(broker.port)"])
        defer { a.stopNow() }
        let b = try await DaemonProcess(name: "fallback-relay-b", extraArguments: ["--no-mdns", "--relay", "mqtt://devB:secret-b@127.0.0.1:\(broker.port)"])
        defer { b.stopNow() }
        try await Self.waitForBroker(a)
        try await Self.waitForBroker(b)
        // Port 1 on loopback: nothing listens, the connection is refused at once.
        let (inviter, joined) = try await Self.pair(inviter: a, joiner: b, address: "127.0.0.1:1")
        #expect(joined.status == 0, "\(joined.output)")
        #expect(joined.output.contains("paired through the relay broker"), "\(joined.output)")
        #expect((inviter["paired"] as? [String: Any])?["via"] as? String == "relay", "\(inviter)")
    }

    /// Creates a code on `inviter` and joins it from `joiner` without an address (so through
    /// the broker); `beforeJoin` runs while the code is live.
    private static func pair(inviter: DaemonProcess, joiner: DaemonProcess, address: String? = nil,
                             beforeJoin: ((String) async throws -> Void)? = nil) async throws -> ([String: Any], (status: Int32, output: String)) {
        let waiter = try ChildProcess("meshctl", ["--socket", inviter.socketPath, "pair", "--json"])
        defer { waiter.terminate(); waiter.process.waitUntilExit() }
        guard let first = try await waiter.readLine(timeout: 10),
              let codeLine = try JSONSerialization.jsonObject(with: Data(first.utf8)) as? [String: Any],
              let code = codeLine["code"] as? String
        else { throw DaemonProcessError("pair --json printed no code line") }
        try await beforeJoin?(code)
        let joined = try await joiner.meshctl(["pair", "-"] + (address.map { ["--address", $0] } ?? []), timeout: 25,
                                              stdin: code + "\n")
        guard joined.status == 0 else { return ([:], joined) }
        guard let last = try await waiter.readLine(timeout: 10),
              let result = try JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any]
        else { throw DaemonProcessError("pair --json printed no result line") }
        return (result, joined)
    }

    /// A well-formed code with the same public hint as `code` and other secret characters.
    static func wrongCode(sameHintAs code: String) -> String? {
        let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ")
        var characters = Array(code.replacingOccurrences(of: "-", with: ""))
        guard characters.count == 8 else { return nil }
        characters[3] = characters[3] == "Z" ? "Y" : "Z"
        for check in alphabet {
            characters[7] = check
            let candidate = String(characters[0..<4]) + "-" + String(characters[4..<8])
            if (try? PairingCode.parse(candidate)) != nil { return candidate }
        }
        return nil
    }

    /// Waits (≤ 10 s) until the daemon's broker connection is up.
    static func waitForBroker(_ daemon: DaemonProcess) async throws {
        try await waitUntil("\(daemon.name) connected to the relay broker", timeout: 10) {
            (try await daemon.status()["relay"] as? [String: Any])?["state"] as? String == "connected"
        }
    }
}
