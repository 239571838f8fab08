import Foundation
import Testing

extension MeshdLabRelayTests {
    /// A real `meshd` and its broker: what `meshctl status` says when the account, the
    /// certificate or the broker itself is wrong or gone, and that the daemon comes back by
    /// itself once it is right again.
    @Suite("meshd and the broker: its state in words")
    struct Broker {
        let a = RelayLab.a

        @Test("connected over TLS with the account's password; a broker that is killed is unreachable, then connected again")
        func connectsAndReconnects() async throws {
            try await RelayLab.scenario { lab in
                try await lab.startDaemon(a, relay: .account(of: a))
                let up = try await lab.awaitRelayState(a, "connected")
                #expect(up.host == RelayLab.brokerAddress)
                #expect(up.url == "mqtts://devA@\(RelayLab.brokerAddress):\(RelayLab.tlsPort)", "no password in the URL shown")
                #expect(up.mqtt == "MQTT 5", "Mosquitto 2 offers MQTT 5")
                let text = try await lab.statusText(a)
                #expect(text.contains("connected"), "meshctl status says so in words: \(text)")
                // The broker knows the account and a client ID; never which device it is.
                let id = try await lab.meshd.status(a).deviceID
                let leaks = lab.brokerLogLeaks(texts: RelayLab.printedForms(ofDeviceID: id).texts + ["host-a"])
                #expect(leaks.isEmpty, "the broker's log names the device: \(leaks.prefix(5))")
                #expect(lab.brokerLog.contains { $0.contains("u'devA'") }, "the broker logged A's connection")

                try await lab.killBroker()
                let down = try await lab.awaitRelayState(a, "unreachable")
                print("lab figure: relay: broker killed, A reports \(down.state): \(down.detail ?? "-")")
                let restarted = ContinuousClock.now
                try await lab.restartBroker()
                try await lab.awaitRelayState(a, "connected", timeout: .seconds(40))
                print("lab figure: relay: A connected again \(LabSession.ms(ContinuousClock.now - restarted)) ms after the broker came back")
            }
        }

        @Test("plain mqtt:// on port 1883 connects too")
        func plainMQTTConnects() async throws {
            try await RelayLab.scenario { lab in
                var relay = RelayLab.Relay.account(of: a)
                relay.scheme = "mqtt"
                relay.port = RelayLab.plainPort
                try await lab.startDaemon(a, relay: relay)
                let up = try await lab.awaitRelayState(a, "connected")
                #expect(up.url == "mqtt://devA@\(RelayLab.brokerAddress):\(RelayLab.plainPort)")
            }
        }

        @Test("a wrong password: meshctl status says auth refused, and the daemon keeps running")
        func wrongPasswordIsAuthRefused() async throws {
            try await RelayLab.scenario { lab in
                var relay = RelayLab.Relay.account(of: a)
                relay.password = "not-" + (try lab.password("devA"))
                let daemon = try await lab.startDaemon(a, relay: relay)
                let refused = try await lab.awaitRelayState(a, "auth refused")
                #expect(refused.detail != nil, "it says what happened")
                let text = try await lab.statusText(a)
                #expect(text.contains("auth refused"), "meshctl status: \(text)")
                #expect(!text.contains(relay.password ?? "-"), "the password is never shown")
                #expect(!daemon.errorOutput.contains(relay.password ?? "-"), "the password is never logged")
                #expect(daemon.isRunning)
            }
        }

        @Test("a broker certificate from another CA: meshctl status says TLS failed")
        func otherCertificateIsTLSFailed() async throws {
            try await RelayLab.scenario { lab in
                var relay = RelayLab.Relay.account(of: a)
                relay.port = RelayLab.otherCAPort
                let daemon = try await lab.startDaemon(a, relay: relay)
                let failed = try await lab.awaitRelayState(a, "TLS failed")
                #expect(failed.detail != nil, "it says what happened")
                let text = try await lab.statusText(a)
                #expect(text.contains("TLS failed"), "meshctl status: \(text)")
                #expect(daemon.isRunning)
            }
        }
    }
}
