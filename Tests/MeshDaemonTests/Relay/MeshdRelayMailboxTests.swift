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
}
