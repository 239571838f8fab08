#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing

/// Store and forward through a real Mosquitto, with two `meshd` that are never on at the same
/// time: A queues 100 reliable items while B is off and stops; B starts and gets all 100, once
/// each, from the broker while A is still off; B stops; A starts and its outbox for B empties
/// from the acks B left at the broker — without posting the items again.
@Suite("meshd store and forward through the relay mailbox",
       .enabled(if: ChildProcess.executable("meshd") != nil && ChildProcess.executable("meshctl") != nil && MosquittoBroker.shouldRun))
struct MeshdRelayMailboxTests {
    static func counters(_ daemon: DaemonProcess) async throws -> [String: UInt64] {
        ((try await daemon.status()["counters"] as? [String: Any]) ?? [:]).mapValues { ($0 as? NSNumber)?.uint64Value ?? 0 }
    }

    /// Waits until the daemon's counters satisfy `condition`; records the last ones on timeout.
    @discardableResult
    static func counters(_ daemon: DaemonProcess, _ what: String, timeout: Double,
                         until condition: @escaping ([String: UInt64]) -> Bool) async throws -> [String: UInt64] {
        var last: [String: UInt64] = [:]
        do {
            return try await eventually(what, timeout: timeout) {
                last = try await counters(daemon)
                return condition(last) ? last : nil
            }
        } catch is TimedOut {
            let mailbox = last.filter { $0.key.contains("mailbox") || $0.key.hasPrefix("delivery.outbox") }
            throw DaemonProcessError("\(daemon.name): \(what) not within \(timeout) s; counters: \(mailbox.sorted { $0.key < $1.key })")
        }
    }

    /// Every box the daemon posted has been acknowledged by the broker (PUBACK): it is the
    /// broker's to keep from then on.
    static func brokerHoldsEverythingPosted(_ values: [String: UInt64]) -> Bool {
        values["relay.mailbox.boxes_posted", default: 0] > 0
            && values["relay.mailbox.boxes_broker_acked", default: 0] >= values["relay.mailbox.boxes_posted", default: 0]
    }

    @Test func itemsReachADeviceThatCameOnAfterTheSenderWentOffAndTheSendersOutboxClearsLater() async throws {
        let folder = try TemporaryFolder.make()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let broker = try MosquittoBroker(folder: folder, accounts: ["devA": "secret-a", "devB": "secret-b"])
        defer { broker.stop() }
        let a = try await DaemonProcess(name: "mailbox-a", extraArguments: ["--no-mdns", "--relay", "mqtt://devA:secret-a@127.0.0.1:\(broker.port)"])
        defer { a.stopNow() }
        let b = try await DaemonProcess(name: "mailbox-b", extraArguments: ["--no-mdns", "--relay", "mqtt://devB:secret-b@127.0.0.1:\(broker.port)"])
        defer { b.stopNow() }
        _ = try await a.pair(with: b)
        let idA = try await a.deviceID(), idB = try await b.deviceID()

        // B's persistent session subscribes to A's mailbox topic; then B goes off.
        for daemon in [a, b] {
            try await Self.counters(daemon, "mailbox session up with the peer", timeout: 20) {
                $0["relay.mailbox.connected"] == 1 && $0["relay.mailbox.peers"] == 1
            }
        }
        try await b.kill9()
        _ = try await a.waitForChannel(idB, active: false, timeout: 20)

        let count = 100
        let payloads = (1...count).map { "stored-\($0)" }
        for payload in payloads {
            let sent = try await a.meshctl(["send", "--feature", "demo", "--mode", "reliable", payload])
            #expect(sent.status == 0, "\(sent.output)")
        }
        let posted = try await Self.counters(a, "100 items posted and held by the broker", timeout: 30) {
            $0["delivery.mailbox.items_posted", default: 0] >= UInt64(count) && Self.brokerHoldsEverythingPosted($0)
        }
        #expect(posted["delivery.mailbox.items_posted"] == UInt64(count), "each item posted once: \(posted)")
        #expect(posted["delivery.outbox.items"] == UInt64(count), "A keeps every item until B acks it")
        print("A posted \(count) items in \(posted["delivery.mailbox.item_boxes_posted", default: 0]) boxes")
        try await a.kill9()

        // B comes on while A is off: everything arrives from the broker, once.
        let started = Date()
        try await b.restart(listen: "127.0.0.1:0")
        let watch = try WatchProcess(b, feature: "demo")
        defer { watch.stopNow() }
        let envelopes = try await watch.envelopes(count, timeout: 30)
        let took = Date().timeIntervalSince(started)
        #expect(envelopes.map { $0["payload"] as? String ?? "" }.sorted() == payloads.sorted(), "each item exactly once")
        #expect(envelopes.allSatisfy { $0["from"] as? String == idA })
        let received = try await Self.counters(b, "B's acks held by the broker", timeout: 20) {
            $0["delivery.mailbox.acks_posted", default: 0] > 0 && Self.brokerHoldsEverythingPosted($0)
        }
        #expect(received["delivery.mailbox.items_stored"] == UInt64(count), "\(received)")
        #expect(received["delivery.mailbox.duplicates"] == 0, "\(received)")
        print("B got \(count) items from the broker \(String(format: "%.2f", took)) s after it started, with A off")
        try await b.kill9()

        // A comes back while B is off: B's acks clear its outbox, and nothing is posted again.
        try await a.restart(listen: "127.0.0.1:0")
        let cleared = try await Self.counters(a, "A's outbox empty", timeout: 20) { $0["delivery.outbox.items"] == 0 }
        #expect(cleared["delivery.mailbox.items_acked"] == UInt64(count), "\(cleared)")
        #expect(cleared["delivery.mailbox.items_posted"] == 0, "A posted acknowledged items again: \(cleared)")
    }

    /// The revision of A's snapshot of `demo` that `meshctl snapshot get` shows on `daemon` (0: none).
    static func latestRevision(on daemon: DaemonProcess, from peer: String) async throws -> UInt64 {
        let get = try await daemon.meshctl(["snapshot", "get", "--feature", "demo", "--peer", peer, "--json"])
        guard get.status == 0, let object = try? JSONSerialization.jsonObject(with: Data(get.output.utf8)) as? [String: Any] else {
            return 0
        }
        return (object["revision"] as? NSNumber)?.uint64Value ?? 0
    }

    /// A publishes two revisions of a snapshot while B is off and stops; B comes on while A is
    /// still off and `snapshot get` shows A's latest revision. The broker replaying A's older box
    /// to B (after B restarted, so the box's counter is new to it) does not roll B's slot back.
    @Test func theLatestSnapshotReachesADeviceThatCameOnAfterTheSenderWentOffAndAReplayDoesNotRollItBack() async throws {
        let folder = try TemporaryFolder.make()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let broker = try MosquittoBroker(folder: folder, accounts: ["devA": "secret-a", "devB": "secret-b"])
        defer { broker.stop() }
        let a = try await DaemonProcess(name: "slot-a", extraArguments: ["--no-mdns", "--relay", "mqtt://devA:secret-a@127.0.0.1:\(broker.port)"])
        defer { a.stopNow() }
        let b = try await DaemonProcess(name: "slot-b", extraArguments: ["--no-mdns", "--relay", "mqtt://devB:secret-b@127.0.0.1:\(broker.port)"])
        defer { b.stopNow() }
        _ = try await a.pair(with: b)
        let idA = try await a.deviceID(), idB = try await b.deviceID()
        for daemon in [a, b] {
            try await Self.counters(daemon, "mailbox session up with the peer", timeout: 20) {
                $0["relay.mailbox.connected"] == 1 && $0["relay.mailbox.peers"] == 1
            }
        }
        try await b.kill9()
        _ = try await a.waitForChannel(idB, active: false, timeout: 20)

        // A third party on the broker records A's snapshot boxes, to replay the older one later.
        let tap = try BrokerTap(broker, account: "devA", password: "secret-a")
        defer { tap.stop() }
        try await tap.waitSubscribed(timeout: 10)
        for revision in [10, 20] {
            let sent = try await a.meshctl(["send", "--feature", "demo", "--mode", "snapshot", "--revision", "\(revision)",
                                            "state \(revision)"])
            #expect(sent.status == 0, "\(sent.output)")
            // One revision per pass, so each goes out as its own box.
            try await Self.counters(a, "revision \(revision) posted", timeout: 20) {
                $0["delivery.mailbox.snapshots_posted", default: 0] >= (revision == 10 ? 1 : 2)
            }
        }
        let posted = try await Self.counters(a, "both snapshot boxes held by the broker", timeout: 20) {
            Self.brokerHoldsEverythingPosted($0)
        }
        #expect(posted["delivery.mailbox.snapshots_posted"] == 2, "each revision posted once: \(posted)")
        #expect(posted["relay.mailbox.unacknowledged"] == 0, "\(posted)")
        let boxes = try await tap.messages(kind: 0x06, count: 2, timeout: 10)
        try await a.terminate()

        // B comes on while A is off: A's latest revision comes from the broker.
        let started = Date()
        try await b.restart(listen: "127.0.0.1:0")
        let revision = try await eventually("A's latest snapshot on B", timeout: 30) {
            let revision = try await Self.latestRevision(on: b, from: idA)
            return revision == 20 ? revision : nil
        }
        #expect(revision == 20)
        print("B had A's latest snapshot \(String(format: "%.2f", Date().timeIntervalSince(started))) s after it started, with A off")
        try await Self.counters(b, "B's snapshot acks held by the broker", timeout: 20) {
            $0["delivery.mailbox.snapshots_received", default: 0] >= 1 && Self.brokerHoldsEverythingPosted($0)
        }

        // The broker replays A's older box to B after B restarted (B's replay guard starts
        // empty): it opens, and the slot keeps the newer revision.
        try await b.kill9()
        try await b.restart(listen: "127.0.0.1:0")
        try await Self.counters(b, "B's mailbox session up", timeout: 20) { $0["relay.mailbox.connected"] == 1 }
        try tap.replay(boxes[0])
        let replayed = try await Self.counters(b, "the replayed older box handled", timeout: 20) {
            $0["delivery.mailbox.snapshots_stale", default: 0] >= 1
        }
        #expect(replayed["delivery.mailbox.snapshots_received"] == 1, "\(replayed)")
        #expect(try await Self.latestRevision(on: b, from: idA) == 20, "a replayed older box rolled the slot back")
    }
}

/// `mosquitto_sub` on the whole prefix as one account, read as it prints (`TOPIC HEX` lines),
/// and `mosquitto_pub` to post a recorded message again: the test's stand-in for a broker that
/// keeps and replays what passes through it.
final class BrokerTap: @unchecked Sendable {
    private let broker: MosquittoBroker
    private let account: String, password: String
    private let process = Process()
    private let pipe = Pipe()
    private var buffer = Data()
    private var lines: [String] = []

    init(_ broker: MosquittoBroker, account: String, password: String) throws {
        self.broker = broker
        self.account = account
        self.password = password
        process.executableURL = URL(fileURLWithPath: "/usr/bin/mosquitto_sub")
        process.arguments = ["-h", "127.0.0.1", "-p", "\(broker.port)", "-u", account, "-P", password, "-d",
                             "-t", "sessionmesh/#", "-F", "%t %x"]
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        try process.run()
    }

    /// Waits until the broker confirmed the subscription (`-d` prints the SUBACK).
    func waitSubscribed(timeout: Double) async throws {
        _ = try await next(timeout: timeout) { $0.contains("SUBACK") ? $0 : nil }
    }

    /// The first `count` messages whose relay message kind is `kind`, as (topic, hex payload).
    func messages(kind: UInt8, count: Int, timeout: Double) async throws -> [(topic: String, hex: String)] {
        let prefix = String(format: "01%02x", kind)
        var found: [(topic: String, hex: String)] = []
        while found.count < count {
            found.append(try await next(timeout: timeout) { line in
                let fields = line.split(separator: " ")
                guard fields.count == 2, fields[0].hasPrefix("sessionmesh/"), fields[1].hasPrefix(prefix) else { return nil }
                return (String(fields[0]), String(fields[1]))
            })
        }
        return found
    }

    /// Publishes a recorded message again, at QoS 1.
    func replay(_ message: (topic: String, hex: String)) throws {
        var bytes: [UInt8] = []
        var index = message.hex.startIndex
        while let next = message.hex.index(index, offsetBy: 2, limitedBy: message.hex.endIndex), index < message.hex.endIndex {
            bytes.append(UInt8(message.hex[index..<next], radix: 16) ?? 0)
            index = next
        }
        let file = broker.folder + "/tap-replay.bin"
        FileManager.default.createFile(atPath: file, contents: Data(bytes))
        try SystemTool.run("/usr/bin/mosquitto_pub", ["-h", "127.0.0.1", "-p", "\(broker.port)", "-u", account, "-P", password,
                                                       "-t", message.topic, "-q", "1", "-f", file])
    }

    func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    /// The next line (from those read so far, then from the pipe) that `match` takes, within `timeout` s.
    private func next<T: Sendable>(timeout: Double, _ match: @escaping @Sendable (String) -> T?) async throws -> T {
        try await blocking {
            let deadline = Date().addingTimeInterval(timeout)
            while true {
                while let newline = self.buffer.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = String(decoding: self.buffer[self.buffer.startIndex..<newline], as: UTF8.self)
                    self.buffer.removeSubrange(self.buffer.startIndex...newline)
                    if let found = match(line) { return found }
                }
                guard deadline.timeIntervalSinceNow > 0,
                      let chunk = PipeReader.read(self.pipe.fileHandleForReading, timeout: deadline.timeIntervalSinceNow),
                      !chunk.isEmpty else {
                    throw DaemonProcessError("mosquitto_sub: nothing matching within \(timeout) s")
                }
                self.buffer.append(chunk)
            }
        }
    }
}
