import Foundation
import Testing

/// Two `meshd` on loopback that cannot reach each other directly (every address they know of
/// each other leads nowhere; no mDNS) but share a real Mosquitto: their channel comes up through
/// the broker, reliable items and snapshots go both ways, and `meshctl peers` says the path is
/// the relay.
@Suite("meshd channel over the relay", .enabled(if: ChildProcess.executable("meshd") != nil && MosquittoBroker.shouldRun))
struct MeshdRelayChannelTests {
    @Test func theChannelRunsThroughTheBrokerWhenNoDirectPathWorks() async throws {
        let folder = try TemporaryFolder.make()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let broker = try MosquittoBroker(folder: folder, accounts: ["devA": "secret-a", "devB": "secret-b"])
        defer { broker.stop() }
        let a = try await DaemonProcess(name: "relay-a", extraArguments: ["--no-mdns", "--relay", "mqtt://devA:secret-a@127.0.0.1:\(broker.port)"])
        defer { a.stopNow() }
        let b = try await DaemonProcess(name: "relay-b", extraArguments: ["--no-mdns", "--relay", "mqtt://devB:secret-b@127.0.0.1:\(broker.port)"])
        defer { b.stopNow() }
        _ = try await a.pair(with: b)
        let idA = try await a.deviceID(), idB = try await b.deviceID()

        // Both move to ports the other never heard of: the addresses each knows lead nowhere.
        try await a.kill9()
        try await b.kill9()
        try await a.restart(listen: "127.0.0.1:0")
        try await b.restart(listen: "127.0.0.1:0")

        let took = try await a.waitForChannel(idB, timeout: 20)
        try await b.waitForChannel(idA, timeout: 5)
        let peer = try #require(try await a.peers().first { $0["deviceID"] as? String == idB })
        #expect((peer["path"] as? String)?.contains("relay") == true, "\(peer)")
        #expect((peer["path"] as? String)?.contains("127.0.0.1") == true, "\(peer)")
        print("relay channel active \(String(format: "%.2f", took)) s after both restarts")

        let watchB = try WatchProcess(b, feature: "demo")
        defer { watchB.stopNow() }
        let watchA = try WatchProcess(a, feature: "demo")
        defer { watchA.stopNow() }
        _ = try await watchB.next(type: "attached", timeout: 10)
        _ = try await watchA.next(type: "attached", timeout: 10)

        let there = try await a.meshctl(["send", "--feature", "demo", "--mode", "reliable", "through-the-broker"])
        #expect(there.status == 0, "\(there.output)")
        let hello = try await watchB.next(type: "envelope", timeout: 15)
        #expect(hello["payload"] as? String == "through-the-broker")
        #expect(hello["from"] as? String == idA)
        let back = try await b.meshctl(["send", "--feature", "demo", "--mode", "reliable", "and-back"])
        #expect(back.status == 0, "\(back.output)")
        let reply = try await watchA.next(type: "envelope", timeout: 15)
        #expect(reply["payload"] as? String == "and-back")

        let snapshotA = try await a.meshctl(["send", "--feature", "demo", "--mode", "snapshot", "--revision", "2", #"{"from":"a"}"#])
        #expect(snapshotA.status == 0, "\(snapshotA.output)")
        #expect(try await watchB.next(type: "snapshot", timeout: 15)["payload"] as? String == #"{"from":"a"}"#)
        let snapshotB = try await b.meshctl(["send", "--feature", "demo", "--mode", "snapshot", "--revision", "5", #"{"from":"b"}"#])
        #expect(snapshotB.status == 0, "\(snapshotB.output)")
        #expect(try await watchA.next(type: "snapshot", timeout: 15)["payload"] as? String == #"{"from":"b"}"#)

        // The broker is not trusted. What it sees names neither device nor feature; its replays
        // of what it carried and garbage on the pair's topics are dropped: the channel stays up,
        // nothing arrives twice, and the next item arrives once.
        let observer = try Self.observe(broker, messages: 12)
        let watched = try await a.meshctl(["send", "--feature", "demo", "--mode", "reliable", "observed"])
        #expect(watched.status == 0, "\(watched.output)")
        #expect(try await watchB.next(type: "envelope", timeout: 15)["payload"] as? String == "observed")
        let seen = try await observer.lines()
        #expect(!seen.isEmpty, "the observer saw no relay traffic")
        let compact = [idA, idB].map { $0.replacingOccurrences(of: "-", with: "").lowercased() }
        for line in seen {
            let lowered = line.lowercased().replacingOccurrences(of: "-", with: "")
            #expect(!compact.contains { lowered.contains($0.prefix(12)) }, "a device ID on the broker: \(line)")
            #expect(!line.contains("demo") && !line.contains(Self.hex("demo")), "the feature name on the broker: \(line)")
        }
        for line in seen {
            let parts = line.split(separator: " ", maxSplits: 1).map(String.init)
            guard parts.count == 2 else { continue }
            try Self.publish(broker, topic: parts[0], hex: parts[1], copies: 3)
            try Self.publishGarbage(broker, topic: parts[0], count: 50)
        }
        let after = try await a.meshctl(["send", "--feature", "demo", "--mode", "reliable", "after-the-replays"])
        #expect(after.status == 0, "\(after.output)")
        let next = try await watchB.next(type: "envelope", timeout: 15)
        #expect(next["payload"] as? String == "after-the-replays", "a replayed item was delivered again: \(next)")
        #expect(try await a.channelState(of: idB) == "active")
        #expect(try await b.channelState(of: idA) == "active")
    }

    /// `mosquitto_sub` as devA on the whole prefix, printing `TOPIC HEXPAYLOAD` lines, until it
    /// saw `messages` messages or 8 s passed.
    private static func observe(_ broker: MosquittoBroker, messages: Int) throws -> ChildLines {
        try ChildLines("/usr/bin/mosquitto_sub", ["-h", "127.0.0.1", "-p", "\(broker.port)", "-u", "devA", "-P", "secret-a",
                                                  "-t", "sessionmesh/#", "-F", "%t %x", "-C", "\(messages)", "-W", "8"])
    }

    private static func publish(_ broker: MosquittoBroker, topic: String, hex: String, copies: Int) throws {
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while let next = hex.index(index, offsetBy: 2, limitedBy: hex.endIndex), index < hex.endIndex {
            bytes.append(UInt8(hex[index..<next], radix: 16) ?? 0)
            index = next
        }
        let file = broker.folder + "/replay.bin"
        FileManager.default.createFile(atPath: file, contents: Data(bytes))
        for _ in 0..<copies {
            try SystemTool.run("/usr/bin/mosquitto_pub", ["-h", "127.0.0.1", "-p", "\(broker.port)", "-u", "devA", "-P", "secret-a",
                                                               "-t", topic, "-q", "1", "-f", file])
        }
    }

    private static func publishGarbage(_ broker: MosquittoBroker, topic: String, count: Int) throws {
        let file = broker.folder + "/garbage.txt"
        let lines = (0..<count).map { n in String(repeating: "\u{1}\(n)x", count: 1 + n % 40) }.joined(separator: "\n") + "\n"
        try lines.write(toFile: file, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/mosquitto_pub")
        process.arguments = ["-h", "127.0.0.1", "-p", "\(broker.port)", "-u", "devA", "-P", "secret-a", "-t", topic, "-l"]
        process.standardInput = FileHandle(forReadingAtPath: file)
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
    }

    private static func hex(_ text: String) -> String { text.utf8.map { String(format: "%02x", $0) }.joined() }
}

/// A program whose output lines are read once it exits (or after 15 s).
final class ChildLines: @unchecked Sendable {
    private let process = Process()
    private let pipe = Pipe()

    init(_ program: String, _ arguments: [String]) throws {
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = arguments
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        try process.run()
    }

    func lines() async throws -> [String] {
        let pipe = self.pipe, process = self.process
        return try await blocking {
            let data = PipeReader.readToEnd(pipe.fileHandleForReading, timeout: 15)
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
            return String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
        }
    }
}
