import Foundation
import Testing

extension MeshdLabRelayTests {
    /// Two paired daemons with no route to each other, through the real broker: what their apps
    /// get, what survives the broker's or the receiver's `kill -9`, and what the broker sees.
    @Suite("meshd through the broker: delivery, crashes, what the broker sees")
    struct Delivery {
        let a = RelayLab.a, b = RelayLab.b
        let feature = "relay-lab-feature"

        /// Sends one envelope (`mode`: realtime, reliable, ack) or snapshot from `host` to `to`.
        func send(_ lab: RelayLab, from host: Int, to device: String, mode: String, _ payload: String) async throws {
            let result = try await lab.meshd.meshctl(host, ["send", "--feature", feature, "--mode", mode, "--to", device, "--json", payload])
            guard result.status == 0 else { throw LabError("meshctl send --mode \(mode) on host \(host) failed: \(result.output) \(result.errors)") }
        }

        /// Waits (≤ `timeout`) until `watch` printed a record of `type` with `payload`.
        func received(_ watch: ChildProcess, type: String, _ payload: String, timeout: Duration = .seconds(15)) async -> Bool {
            await watch.waitForLine(timeout: timeout, where: { line in
                guard let object = MeshdLab.jsonObject(line) else { return false }
                return object["type"] as? String == type && object["payload"] as? String == payload
            }) != nil
        }

        @Test("realtime, reliable, ack and snapshot both ways through the broker; the broker sees no device ID, feature or payload")
        func allModesBothWays() async throws {
            try await RelayLab.scenario { lab in
                let pair = try await lab.pairOverRelay()
                let peers = try await lab.meshd.meshctl(a, ["peers"])
                let rowB = peers.output.split(separator: "\n").first { $0.hasPrefix("host-b") }.map(String.init) ?? ""
                #expect(rowB.contains("relay") && rowB.contains(RelayLab.brokerAddress),
                        "meshctl peers shows B on the relay path through the broker: \(peers.output)")
                let watchA = try await lab.meshd.watch(a, feature: feature)
                let watchB = try await lab.meshd.watch(b, feature: feature)
                var payloads: [String] = []
                for (from, to, watch, toDevice) in [(a, "B", watchB, pair.deviceB), (b, "A", watchA, pair.deviceA)] {
                    for mode in ["realtime", "reliable", "ack", "snapshot"] {
                        let payload = "secret \(mode) payload for \(to) \(UInt32.random(in: 0...UInt32.max))"
                        payloads.append(payload)
                        let started = ContinuousClock.now
                        try await send(lab, from: from, to: toDevice, mode: mode, payload)
                        let type = mode == "snapshot" ? "snapshot" : "envelope"
                        #expect(await received(watch, type: type, payload), "\(mode) to \(to) arrived")
                        print("lab figure: relay: \(mode) to \(to) in \(LabSession.ms(ContinuousClock.now - started)) ms (meshctl send included)")
                    }
                }
                let crossed = lab.observed.dropFirst(pair.observedAtStart).filter { $0.topic.hasPrefix("sessionmesh/") }
                #expect(crossed.count >= 8, "the frames went through the broker: \(crossed.count) publishes seen")
                let idA = RelayLab.printedForms(ofDeviceID: pair.deviceA), idB = RelayLab.printedForms(ofDeviceID: pair.deviceB)
                // The check finds what it looks for: A's short ID published in the clear is caught.
                let canary = "sessionmesh/lab/canary", shortA = String(pair.deviceA.prefix(7))
                _ = try await lab.client(a, user: "devA", "pub", ["-q", "1", "-t", canary, "-m", "device \(shortA)"])
                #expect(try await lab.awaitObserved(topic: canary, payload: "device \(shortA)"))
                let found = lab.leaks(since: 0, texts: idA.texts + idB.texts + [feature, "host-a", "host-b"] + payloads,
                                      byteStrings: [idA.bytes, idB.bytes, Array(idA.bytes.prefix(8)), Array(idB.bytes.prefix(8))])
                #expect(found.contains { $0.contains(canary) }, "the canary was caught")
                let leaks = found.filter { !$0.contains(canary) }
                #expect(leaks.isEmpty, "the observer on # saw in the clear: \(leaks.prefix(10))")
                print("lab figure: relay: observer saw \(crossed.count) publishes for 8 items, none with an ID, name, feature or payload")
            }
        }

        @Test("a direct route appears: the channel moves to it; it goes: back on the relay within 2 s, nothing lost")
        func directRouteComesAndGoes() async throws {
            try await RelayLab.scenario { lab in
                let pair = try await lab.pairOverRelay()
                let watchB = try await lab.meshd.watch(b, feature: feature)
                try await lab.session.run("direct", ["up"])
                let appeared = ContinuousClock.now
                try await lab.awaitPath(containing: "relay", excluding: true, timeout: .seconds(40))
                print("lab figure: relay: direct link up, channel on it after \(LabSession.ms(ContinuousClock.now - appeared)) ms")
                try await send(lab, from: a, to: pair.deviceB, mode: "reliable", "on-direct")
                #expect(await received(watchB, type: "envelope", "on-direct"))
                try await lab.session.run("direct", ["down"])
                let gone = ContinuousClock.now
                try await lab.awaitPath(containing: "relay", timeout: .seconds(10))
                let back = ContinuousClock.now - gone
                print("lab figure: relay: direct link gone, channel back on the relay after \(LabSession.ms(back)) ms")
                #expect(back <= .milliseconds(2500), "back on the relay within 2 s (0.5 s for the check's own polling)")
                try await send(lab, from: a, to: pair.deviceB, mode: "reliable", "on-relay-again")
                #expect(await received(watchB, type: "envelope", "on-relay-again"))
                #expect(MeshdLab.envelopePayloads(watchB) == ["on-direct", "on-relay-again"], "each once, in order")
            }
        }

        @Test("kill -9 of the broker in the middle of 30 reliable items: every one arrives once, in order, after it is back")
        func brokerKilledMidBurst() async throws {
            try await RelayLab.scenario { lab in
                let pair = try await lab.pairOverRelay()
                let watchB = try await lab.meshd.watch(b, feature: feature)
                let sent = (1...30).map { "burst-\($0)" }
                for (index, payload) in sent.enumerated() {
                    if index == 10 { try await lab.killBroker() }
                    try await send(lab, from: a, to: pair.deviceB, mode: "reliable", payload)
                }
                let restarted = ContinuousClock.now
                try await lab.restartBroker()
                guard let last = sent.last else { return }
                #expect(await received(watchB, type: "envelope", last, timeout: .seconds(40)), "the last item arrived")
                print("lab figure: relay: broker killed after 10 of 30 reliable items; all there \(LabSession.ms(ContinuousClock.now - restarted)) ms after it came back")
                let got = MeshdLab.envelopePayloads(watchB).filter { $0.hasPrefix("burst-") }
                #expect(got == sent, "0 lost, 0 duplicated, in order")
            }
        }

        @Test("kill -9 of the receiver: reliable items sent while it is down arrive once after it restarts")
        func receiverKilled() async throws {
            try await RelayLab.scenario { lab in
                let pair = try await lab.pairOverRelay()
                guard let daemonB = lab.meshd.daemon(b) else { throw LabError("B is not running") }
                kill(daemonB.pid, SIGKILL)
                _ = await daemonB.waitForExit(timeout: .seconds(5))
                let sent = (1...10).map { "while-down-\($0)" }
                for payload in sent { try await send(lab, from: a, to: pair.deviceB, mode: "reliable", payload) }
                let restarted = ContinuousClock.now
                try await lab.meshd.start(b)
                let watchB = try await lab.meshd.watch(b, feature: feature)
                guard let last = sent.last else { return }
                #expect(await received(watchB, type: "envelope", last, timeout: .seconds(30)), "the last item arrived")
                print("lab figure: relay: 10 items sent to a killed B; all there \(LabSession.ms(ContinuousClock.now - restarted)) ms after its restart")
                #expect(MeshdLab.envelopePayloads(watchB).filter { $0.hasPrefix("while-down-") } == sent, "0 lost, 0 duplicated, in order")
            }
        }
    }
}
