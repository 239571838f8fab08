import Foundation
import MeshMQTT
import NIOCore
import Testing

/// The relay's MQTT client against a real Mosquitto started by the test on 127.0.0.1: a round
/// trip on the event loop, the broker's refusals in words, TLS verified against a CA the test
/// made, and a broker that goes away and comes back.
@Suite("relay MQTT client against a real broker", .enabled(if: MosquittoBroker.shouldRun))
struct ProcessRelayClientTests {
    private static func options(_ broker: MosquittoBroker, user: String = "devA", tls: Bool = false, caFile: String? = nil,
                                host: String = "127.0.0.1") -> MQTTClientOptions {
        MQTTClientOptions(host: host, port: broker.port, useTLS: tls, caFile: caFile, username: user,
                          clientID: "test-\(UUID().uuidString.prefix(8))", keepaliveSeconds: 5, connectTimeoutSeconds: 5)
    }

    private static func isMessage(_ event: MQTTClientEvent) -> Bool {
        if case .message = event { return true }
        return false
    }

    @Test func publishAndSubscribeRoundTripOnTheEventLoop() async throws {
        let folder = try TemporaryFolder.make()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let broker = try MosquittoBroker(folder: folder, accounts: ["devA": "secret-a", "devB": "secret-b"])
        defer { broker.stop() }
        let a = try MQTTClientProbe(Self.options(broker), password: "secret-a")
        let b = try MQTTClientProbe(Self.options(broker, user: "devB"), password: "secret-b")
        defer { Task { await a.shutdown(); await b.shutdown() } }

        try await a.on { $0.connect(offering: .v5) }
        try await b.on { $0.subscribe("sessionmesh/to-b", qos: .atLeastOnce); $0.connect(offering: .v5) }
        #expect(await a.next() == .connected(.v5))
        #expect(await b.next() == .connected(.v5))

        // The broker confirms each subscription (SUBACK): the one made before connecting on the
        // connection, a later one at once; the client knows which are in place.
        #expect(await b.nextSubscribed() == "sessionmesh/to-b")
        try await b.on { $0.subscribe("sessionmesh/probe-b", qos: .atLeastOnce) }
        #expect(await b.nextSubscribed() == "sessionmesh/probe-b")
        #expect(try await b.on { $0.isSubscribed("sessionmesh/probe-b") && $0.isSubscribed("sessionmesh/to-b") })
        #expect(try await b.on { !$0.isSubscribed("sessionmesh/elsewhere") })
        // The subscription is in place once a probe published after the connect comes back.
        try await b.on { try $0.publish(topic: "sessionmesh/probe-b", payload: [1], qos: .atLeastOnce) }
        #expect(await b.next() == .message(MQTTMessage(topic: "sessionmesh/probe-b", payload: [1])))

        let large = (0..<60_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        try await a.on { try $0.publish(topic: "sessionmesh/to-b", payload: [0xAA, 0x00, 0x55], qos: .atLeastOnce) }
        try await a.on { try $0.publish(topic: "sessionmesh/to-b", payload: large, qos: .atMostOnce, expirySeconds: 2) }
        #expect(await b.next() == .message(MQTTMessage(topic: "sessionmesh/to-b", payload: [0xAA, 0x00, 0x55])))
        #expect(await b.next() == .message(MQTTMessage(topic: "sessionmesh/to-b", payload: large)))
        #expect(!a.eventsOnLoop.isSet && !b.eventsOnLoop.isSet, "an event was delivered off the client's loop")
        #expect(try await a.on { $0.connectedVersion } == .v5)
    }

    @Test func aWrongPasswordIsAuthRefusedInWords() async throws {
        let folder = try TemporaryFolder.make()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let broker = try MosquittoBroker(folder: folder, accounts: ["devA": "secret-a"])
        defer { broker.stop() }
        for version in MQTTProtocolVersion.allCases {
            let client = try MQTTClientProbe(Self.options(broker), password: "not-the-password")
            try await client.on { $0.connect(offering: version) }
            guard case .disconnected(let failure)? = await client.next() else {
                Issue.record("no refusal under \(version.words)")
                await client.shutdown()
                continue
            }
            #expect(failure.words == "auth refused", "\(version.words): \(failure)")
            #expect(failure.detail.contains("127.0.0.1:\(broker.port)"))
            #expect(!failure.detail.contains("not-the-password"))
            #expect(try await client.on { $0.isConnected } == false)
            await client.shutdown()
        }
    }

    @Test func tlsIsVerifiedAgainstTheGivenCAAndAnotherCAIsTLSFailed() async throws {
        let folder = try TemporaryFolder.make()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let broker = try MosquittoBroker(folder: folder, accounts: ["devA": "secret-a"], tls: true)
        defer { broker.stop() }
        let ca = try #require(broker.tls)

        let verified = try MQTTClientProbe(Self.options(broker, tls: true, caFile: ca.certificate, host: "localhost"), password: "secret-a")
        try await verified.on { $0.connect(offering: .v5) }
        #expect(await verified.next() == .connected(.v5))
        try await verified.on { $0.subscribe("sessionmesh/tls", qos: .atLeastOnce) }
        try await verified.on { try $0.publish(topic: "sessionmesh/tls", payload: [7, 7], qos: .atLeastOnce) }
        #expect(await verified.next() == .message(MQTTMessage(topic: "sessionmesh/tls", payload: [7, 7])))
        await verified.shutdown()

        let other = try TestCertificateAuthority(folder: folder + "/other-ca", name: "another CA")
        let refused = try MQTTClientProbe(Self.options(broker, tls: true, caFile: other.certificate, host: "localhost"), password: "secret-a")
        try await refused.on { $0.connect(offering: .v5) }
        guard case .disconnected(let failure)? = await refused.next() else {
            Issue.record("a broker certificate of another CA was accepted")
            await refused.shutdown()
            return
        }
        #expect(failure.words == "TLS failed", "\(failure)")
        await refused.shutdown()
    }

    @Test func aBrokerThatGoesAwayIsUnreachableAndTheClientConnectsAgainWhenItIsBack() async throws {
        let folder = try TemporaryFolder.make()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let broker = try MosquittoBroker(folder: folder, accounts: ["devA": "secret-a"])
        defer { broker.stop() }
        let client = try MQTTClientProbe(Self.options(broker), password: "secret-a")
        defer { Task { await client.shutdown() } }
        try await client.on { $0.subscribe("sessionmesh/back", qos: .atLeastOnce); $0.connect(offering: .v5) }
        #expect(await client.next() == .connected(.v5))

        broker.stop()
        guard case .disconnected(let lost)? = await client.next(skip: Self.isMessage) else {
            Issue.record("the broker's end went unnoticed")
            return
        }
        #expect(lost.words == "unreachable", "\(lost)")
        try await client.on { $0.connect(offering: .v5) }
        guard case .disconnected(let refused)? = await client.next() else {
            Issue.record("a connect to a stopped broker did not fail")
            return
        }
        #expect(refused.words == "unreachable" && refused.detail.contains("connection refused"), "\(refused)")

        try broker.start()
        try await client.on { $0.connect(offering: .v5) }
        #expect(await client.next() == .connected(.v5))
        // Subscriptions are made again on the new connection.
        try await client.on { try $0.publish(topic: "sessionmesh/back", payload: [9], qos: .atLeastOnce) }
        #expect(await client.next() == .message(MQTTMessage(topic: "sessionmesh/back", payload: [9])))
    }
}
