import Foundation
import Testing

extension MeshdLabRelayTests {
    /// Pairing by code alone between two devices with no route to each other: the rendezvous
    /// on the broker carries the exchange, and the broker sees neither the code nor a device ID.
    @Suite("meshd pairing by code through the broker")
    struct Pairing {
        let a = RelayLab.a, b = RelayLab.b

        @Test("A and B pair by code through the broker; the observer on # sees no device ID and no code")
        func pairsByCodeThroughTheBroker() async throws {
            try await RelayLab.scenario { lab in
                // Fresh devices: an earlier scenario's state (its pairing) is gone.
                for host in [a, b] { try? FileManager.default.removeItem(atPath: lab.session.directory + "/h\(host)/state") }
                try await lab.startDaemon(a, relay: .account(of: a))
                try await lab.startDaemon(b, relay: .account(of: b))
                try await lab.awaitRelayState(a, "connected")
                try await lab.awaitRelayState(b, "connected")
                guard try await !lab.ping(from: a, "198.18.2.1") else { throw LabError("A reaches B directly") }
                let observedAtStart = lab.observed.count

                let started = ContinuousClock.now
                let (code, waiting) = try await lab.meshd.showCode(a)
                let joined = try await lab.meshd.meshctl(b, ["pair", code, "--json"], timeout: .seconds(30))
                #expect(joined.status == 0, "B paired by code alone: \(joined.output) \(joined.errors)")
                #expect(joined.output.contains(#""via":"relay""#), "through the broker: \(joined.output)")
                #expect(await waiting.waitForExit(timeout: .seconds(10)) == 0, "A's meshctl pair: \(waiting.output.map(\.text))")
                #expect(waiting.output.contains { $0.text.contains(#""via":"relay""#) }, "A says so too: \(waiting.output.map(\.text))")
                print("lab figure: relay: paired by code through the broker in \(LabSession.ms(ContinuousClock.now - started)) ms (meshctl included)")
                try await lab.awaitPath(containing: "relay", timeout: .seconds(15))

                let crossed = lab.observed.dropFirst(observedAtStart).filter { $0.topic.hasPrefix("sessionmesh/") }
                #expect(crossed.count >= 4, "the pairing messages went through the broker: \(crossed.count) publishes seen")
                let deviceA = try await lab.meshd.status(a).deviceID, deviceB = try await lab.meshd.status(b).deviceID
                let idA = RelayLab.printedForms(ofDeviceID: deviceA), idB = RelayLab.printedForms(ofDeviceID: deviceB)
                let plainCode = code.replacingOccurrences(of: "-", with: "")
                let secret = String(plainCode.dropFirst(2).prefix(5))
                let codeForms = [code, plainCode, secret].flatMap { [$0, $0.lowercased()] }
                let leaks = lab.leaks(since: observedAtStart, texts: idA.texts + idB.texts + codeForms + ["host-a", "host-b"],
                                      byteStrings: [idA.bytes, idB.bytes, Array(idA.bytes.prefix(8)), Array(idB.bytes.prefix(8))])
                #expect(leaks.isEmpty, "the observer on # saw in the clear: \(leaks.prefix(10))")
                let logLeaks = lab.brokerLogLeaks(texts: codeForms)
                #expect(logLeaks.isEmpty, "the broker's log shows the code: \(logLeaks.prefix(5))")
            }
        }
    }
}
