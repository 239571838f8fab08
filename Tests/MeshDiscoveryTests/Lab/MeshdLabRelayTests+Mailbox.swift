import Foundation
import Testing

extension MeshdLabRelayTests {
    /// Store and forward through the lab's broker (TLS, password file, ACL, in its own
    /// namespace), between two daemons that have no route to each other and are never on at the
    /// same time.
    @Suite("meshd through the broker: store and forward")
    struct Mailbox {
        let a = RelayLab.a, b = RelayLab.b
        let feature = "relay-lab-mailbox"

        /// Host `host`'s counters, from `meshctl status --json`.
        func counters(_ lab: RelayLab, _ host: Int) async throws -> [String: UInt64] {
            try await lab.meshd.status(host).counters
        }

        /// Waits (≤ `timeout`) until host `host`'s counters satisfy `condition`; on time-out the
        /// error names the mailbox and outbox counters it saw last.
        @discardableResult
        func awaitCounters(_ lab: RelayLab, _ host: Int, _ what: String, timeout: Duration,
                           _ condition: @escaping ([String: UInt64]) -> Bool) async throws -> [String: UInt64] {
            var last: [String: UInt64] = [:]
            do {
                try await lab.meshd.waitUntil(what, timeout: timeout) {
                    last = try await counters(lab, host)
                    return condition(last)
                }
            } catch {
                let seen = last.filter { $0.key.contains("mailbox") || $0.key.hasPrefix("delivery.outbox") }
                throw LabError("host \(host): \(error); counters: \(seen.sorted { $0.key < $1.key })")
            }
            return last
        }

        /// Every box the daemon posted has been acknowledged by the broker (PUBACK).
        static func brokerHoldsEverythingPosted(_ values: [String: UInt64]) -> Bool {
            values["relay.mailbox.boxes_posted", default: 0] > 0
                && values["relay.mailbox.boxes_broker_acked", default: 0] >= values["relay.mailbox.boxes_posted", default: 0]
        }

        @Test("A sends 100 reliable items while B is off and stops; B gets all 100 with A still off; A's outbox then empties from B's acks at the broker")
        func itemsWhileNeverOnTogether() async throws {
            try await RelayLab.scenario { lab in
                let pair = try await lab.pairOverRelay()
                for host in [a, b] {
                    try await awaitCounters(lab, host, "the mailbox session up with the peer", timeout: .seconds(20)) {
                        $0["relay.mailbox.connected"] == 1 && $0["relay.mailbox.peers"] == 1
                    }
                }
                await lab.meshd.stop(b)
                try await lab.meshd.waitUntil("A without a channel to B", timeout: .seconds(20)) {
                    try await lab.path(a, peer: "host-b")?.channel != "active"
                }

                let sent = (1...100).map { "stored-\($0)" }
                for payload in sent {
                    let result = try await lab.meshd.meshctl(a, ["send", "--feature", feature, "--mode", "reliable",
                                                                 "--to", pair.deviceB, payload])
                    guard result.status == 0 else { throw LabError("meshctl send on A failed: \(result.output) \(result.errors)") }
                }
                let posted = try await awaitCounters(lab, a, "100 items posted and held by the broker", timeout: .seconds(40)) {
                    $0["delivery.mailbox.items_posted", default: 0] >= 100 && Self.brokerHoldsEverythingPosted($0)
                }
                #expect(posted["delivery.mailbox.items_posted"] == 100, "each item posted once: \(posted)")
                #expect(posted["delivery.outbox.items"] == 100, "A keeps every item until B acks it")
                await lab.meshd.stop(a)

                // B comes on while A is off: everything comes from the broker, once each.
                let bStarted = ContinuousClock.now
                try await lab.startDaemon(b, relay: .account(of: b))
                let watchB = try await lab.meshd.watch(b, feature: feature)
                try await lab.meshd.waitUntil("B has the 100 items", timeout: .seconds(40)) {
                    MeshdLab.envelopePayloads(watchB).count >= sent.count
                }
                let bTook = ContinuousClock.now - bStarted
                #expect(MeshdLab.envelopePayloads(watchB).sorted() == sent.sorted(), "0 lost, 0 duplicated")
                print("lab figure: relay: store and forward: B had all 100 items \(LabSession.ms(bTook)) ms after it started, with A off (\(posted["delivery.mailbox.item_boxes_posted", default: 0]) boxes)")
                let acked = try await awaitCounters(lab, b, "B's acks held by the broker", timeout: .seconds(20)) {
                    $0["delivery.mailbox.acks_posted", default: 0] > 0 && Self.brokerHoldsEverythingPosted($0)
                }
                #expect(acked["delivery.mailbox.items_stored"] == 100, "\(acked)")
                #expect(acked["delivery.mailbox.duplicates"] == 0, "\(acked)")
                // B goes off again, so nothing but the acks that waited at the broker can clear A's outbox.
                await lab.meshd.stop(b)

                // A comes back while B is off: B's acks waited at the broker, and A's outbox empties from them.
                let aStarted = ContinuousClock.now
                try await lab.startDaemon(a, relay: .account(of: a))
                let cleared = try await awaitCounters(lab, a, "A's outbox empty", timeout: .seconds(30)) {
                    $0["delivery.outbox.items"] == 0
                }
                let aTook = ContinuousClock.now - aStarted
                #expect(cleared["delivery.mailbox.items_acked"] == 100, "the acks at the broker cleared it: \(cleared)")
                #expect(cleared["delivery.mailbox.items_posted"] == 0, "A posted acknowledged items again: \(cleared)")
                print("lab figure: relay: store and forward: A's outbox empty \(LabSession.ms(aTook)) ms after it started, with B off")
            }
        }
    }
}
