@testable import MeshDaemon
import MeshMQTT
import Testing

/// When the daemon reconnects to its broker, which MQTT version it offers, and the state it
/// reports, without a broker or a clock.
@Suite("relay broker policy")
struct RelayBrokerPolicyTests {
    private let url = RelayURL(useTLS: true, host: "broker.example", username: "devA")

    @Test func failuresBackOffExponentiallyAndAConnectionResetsTheBackoff() {
        var rng = SystemRandomNumberGenerator()
        var policy = RelayBrokerPolicy(now: 0, initialSeconds: 0.5, maximumSeconds: 30)
        #expect(policy.start(now: 0) == .connect(.v5))
        var delays: [UInt64] = []
        for attempt in 0..<10 {
            guard case .retry(let version, let delay) = policy.failed(MQTTFailure(.unreachable, "down"), now: UInt64(attempt), using: &rng) else {
                Issue.record("no retry")
                return
            }
            #expect(version == .v5)
            delays.append(delay)
        }
        // 0.5 s doubling to at most 30 s, each within the jitter of ±25 %.
        #expect(delays[0] >= 375_000_000 && delays[0] <= 625_000_000)
        #expect(delays[3] >= 3_000_000_000 && delays[3] <= 5_000_000_000)
        #expect(delays.allSatisfy { $0 <= 37_500_000_000 })
        #expect(delays[9] >= 22_500_000_000)
        let status = policy.status(url: url, now: 10, wallNow: 1000)
        #expect(status.state == "unreachable" && status.detail == "down" && status.host == "broker.example")
        #expect(status.url == "mqtts://devA@broker.example:8883")

        policy.connected(.v5, now: 20)
        #expect(policy.status(url: url, now: 20, wallNow: 1000).state == "connected")
        #expect(policy.status(url: url, now: 20, wallNow: 1000).mqtt == "MQTT 5")
        guard case .retry(_, let first) = policy.failed(MQTTFailure(.unreachable, "down"), now: 30, using: &rng) else {
            Issue.record("no retry")
            return
        }
        #expect(first <= 625_000_000)
    }

    @Test func aBrokerWithoutMQTT5IsOfferedMQTT311AtOnceAndKeepsIt() {
        var rng = SystemRandomNumberGenerator()
        var policy = RelayBrokerPolicy(now: 0)
        #expect(policy.start(now: 0) == .connect(.v5))
        #expect(policy.failed(MQTTFailure(.protocolRefused, "no 5"), now: 1, using: &rng) == .connect(.v311))
        policy.connected(.v311, now: 2)
        #expect(policy.status(url: url, now: 2, wallNow: 0).mqtt == "MQTT 3.1.1")
        guard case .retry(let version, _) = policy.failed(MQTTFailure(.unreachable, "gone"), now: 3, using: &rng) else {
            Issue.record("no retry")
            return
        }
        #expect(version == .v311)
        // A broker that then refuses 3.1.1 too is offered 5 again, after the backoff.
        guard case .retry(let again, _) = policy.failed(MQTTFailure(.protocolRefused, "no 3.1.1"), now: 4, using: &rng) else {
            Issue.record("no retry")
            return
        }
        #expect(again == .v5)
    }

    @Test(arguments: [
        (MQTTFailure.Kind.authRefused, "auth refused"), (.tlsFailed, "TLS failed"), (.unreachable, "unreachable"),
    ])
    func eachFailureIsReportedInWords(kind: MQTTFailure.Kind, words: String) {
        var rng = SystemRandomNumberGenerator()
        var policy = RelayBrokerPolicy(now: 0)
        _ = policy.start(now: 0)
        _ = policy.failed(MQTTFailure(kind, "why"), now: 5_000_000_000, using: &rng)
        let status = policy.status(url: url, now: 6_000_000_000, wallNow: 100)
        #expect(status.state == words)
        #expect(status.detail == "why")
        #expect(status.since == 99)
        #expect((status.retryInSeconds ?? -1) >= 0)
    }
}
