import Foundation
import Testing

/// The relay lab (``RelayLab``): devices on different networks and a real Mosquitto between
/// them. These first tests check the lab itself, so a relay scenario that fails is not the
/// lab's fault: no route between A and B, the broker's TLS and accounts, its ACL, and an
/// observer that sees every publish. One lab serves the whole suite (``RelayLabScope``).
@Suite("relay lab: A and B on different networks, a real Mosquitto in between", .serialized,
       .enabled(if: RelayLab.shouldRun, RelayLab.skipComment), .relayLab)
struct MeshdLabRelayTests {
    let a = RelayLab.a, b = RelayLab.b

    @Test("A and B have no route to each other; both reach the broker")
    func noDirectRoute() async throws {
        try await RelayLab.scenario { lab in
            let aToBroker = try await lab.ping(from: a, RelayLab.brokerAddress)
            let bToBroker = try await lab.ping(from: b, RelayLab.brokerAddress)
            let aToB = try await lab.ping(from: a, "198.18.2.1")
            let bToA = try await lab.ping(from: b, "198.18.1.1")
            #expect(aToBroker, "A reaches the broker")
            #expect(bToBroker, "B reaches the broker")
            #expect(!aToB, "A must not reach B")
            #expect(!bToA, "B must not reach A")
        }
    }

    @Test("a publish from A over TLS with its password reaches a subscriber in B, and the observer")
    func publishCrossesTheBroker() async throws {
        try await RelayLab.scenario { lab in
            let topic = "sessionmesh/lab/crossing", payload = "from A \(UInt32.random(in: 0...UInt32.max))"
            let subscriber = try await lab.subscriber(b, user: "devB", topic: topic)
            defer { subscriber.terminate() }
            let published = try await lab.client(a, user: "devA", "pub", ["-q", "1", "-t", topic, "-m", payload])
            #expect(published.status == 0, "A's publish: \(published.errors)")
            #expect(await subscriber.waitForLine(timeout: .seconds(10), where: { $0 == "\(topic) \(payload)" }) != nil,
                    "B's subscriber got A's message: \(subscriber.output.map(\.text))")
            #expect(try await lab.awaitObserved(topic: topic, payload: payload), "the observer saw it")
        }
    }

    @Test("a wrong password is refused, and so is a broker certificate from another CA")
    func wrongPasswordAndCertificateAreRefused() async throws {
        try await RelayLab.scenario { lab in
            let topic = "sessionmesh/lab/refused"
            let wrong = try await lab.client(a, user: "devA", "pub", ["-t", topic, "-m", "wrong password"],
                                             password: "not-" + lab.password("devA"))
            #expect(wrong.status != 0)
            #expect(wrong.errors.contains("not authorised"), "mosquitto_pub says why: \(wrong.errors)")
            let otherCA = try await lab.client(a, user: "devA", "pub", ["-t", topic, "-m", "other CA's broker"],
                                               port: RelayLab.otherCAPort)
            #expect(otherCA.status != 0)
            #expect(otherCA.errors.contains("TLS"), "mosquitto_pub says why: \(otherCA.errors)")
            let trustingOther = try await lab.client(a, user: "devA", "pub", ["-t", topic, "-m", "trusting the other CA"],
                                                     caFile: "other-ca.crt")
            #expect(trustingOther.status != 0, "the lab CA's broker is refused by a client trusting only the other CA")
            // A later publish that gets through is the barrier: none of the refused ones arrived.
            let good = try await lab.client(a, user: "devA", "pub", ["-q", "1", "-t", topic, "-m", "barrier"])
            #expect(good.status == 0, "\(good.errors)")
            #expect(try await lab.awaitObserved(topic: topic, payload: "barrier"))
            let seen = lab.observed.filter { $0.topic == topic }.map(\.payloadHex)
            #expect(seen == [RelayLab.hex(Array("barrier".utf8))], "only the accepted publish reached the broker")
        }
    }

    @Test("a device account is confined to sessionmesh/#; the observer sees every publish on it")
    func aclConfinesDevicesAndTheObserverSeesAll() async throws {
        try await RelayLab.scenario { lab in
            let outside = try await lab.client(a, user: "devA", "pub", ["-q", "1", "-t", "elsewhere/lab", "-m", "outside"])
            #expect(outside.status == 0, "the broker drops it silently: \(outside.errors)")
            var expected: [RelayLab.Observed] = []
            for index in 0..<10 {
                for (host, user) in [(a, "devA"), (b, "devB")] {
                    let topic = "sessionmesh/lab/all/\(user)", payload = "\(user) \(index)"
                    let result = try await lab.client(host, user: user, "pub", ["-q", "1", "-t", topic, "-m", payload])
                    #expect(result.status == 0, "\(result.errors)")
                    expected.append(.init(topic: topic, payloadHex: RelayLab.hex(Array(payload.utf8))))
                }
            }
            let last = try #require(expected.last)
            #expect(try await lab.awaitObserved(topic: last.topic, payloadHex: last.payloadHex))
            let seen = lab.observed.filter { $0.topic.hasPrefix("sessionmesh/lab/all/") }
            #expect(seen == expected, "the observer saw all 20 publishes in order")
            #expect(!lab.observed.contains { $0.topic == "elsewhere/lab" }, "a publish outside the prefix was dropped")
        }
    }
}
