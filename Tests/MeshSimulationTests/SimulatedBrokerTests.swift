import MeshMQTT
@testable import MeshSimulation
import Testing

/// The simulated MQTT broker on its own: exact-topic routing, QoS 1 never lost while connected,
/// persistent sessions, outages, and the same faults for the same seed.
@Suite("Simulated MQTT broker")
struct SimulatedBrokerTests {
    /// A broker, one loop, and the received payloads per client.
    final class Bench {
        let clock = VirtualClock()
        let loop: SimulatedEventLoop
        let broker: SimulatedBroker

        init(seed: UInt64, faults: BrokerFaults) {
            loop = SimulatedEventLoop(clock: clock)
            broker = SimulatedBroker(clock: clock, random: SimulationRandom(seed: seed).fork("broker"), faults: faults)
        }

        /// Runs the loop's jobs and timers for `nanoseconds` of virtual time.
        func run(for nanoseconds: UInt64) {
            let end = clock.nanoseconds + nanoseconds
            loop.runUntilIdle()
            for _ in 0..<1_000_000 {
                guard let next = loop.nextDeadline, next <= end else { break }
                clock.advance(to: next)
                loop.fireDue()
            }
            clock.advance(to: end)
            loop.runUntilIdle()
        }

        func publish(_ client: SimulatedBrokerClient, _ topic: String, _ byte: UInt8, qos: MQTTQoS = .atLeastOnce) throws {
            let failure: MQTTFailure? = [byte].withUnsafeBytes { buffer in
                do throws(MQTTFailure) {
                    try client.publish(topic: topic, payload: buffer, qos: qos, expirySeconds: nil)
                    return nil
                } catch {
                    return error
                }
            }
            if let failure { throw failure }
        }
    }

    static func seed() -> UInt64 {
        let seed = (try? SimulationEnvironment.parse())?.replaySeed ?? 11
        print("SimulatedBrokerTests: seed \(seed) (MESH_SIM_SEED=\(seed) replays it)")
        return seed
    }

    /// Publishes 0..<count on `t/a` (and a decoy on `t/b`) and returns what the subscriber got.
    static func exchange(seed: UInt64, faults: BrokerFaults, count: Int, qos: MQTTQoS) throws -> [UInt8] {
        let bench = Bench(seed: seed, faults: faults)
        let subscriber = bench.broker.client("sub", loop: bench.loop), publisher = bench.broker.client("pub", loop: bench.loop)
        var received: [UInt8] = []
        subscriber.onMessage = { message in if message.topic == "t/a" { received += message.payload } else { received.append(255) } }
        subscriber.subscribe("t/a", qos: .atLeastOnce)
        subscriber.start()
        publisher.start()
        bench.run(for: 100_000_000)
        #expect(subscriber.isConnected && publisher.isConnected)
        for byte in 0..<UInt8(count) {
            try bench.publish(publisher, "t/a", byte, qos: qos)
            try bench.publish(publisher, "t/b", byte, qos: qos)
            bench.run(for: 1_000_000)
        }
        bench.run(for: 1_000_000_000)
        return received
    }

    @Test("an honest broker delivers each message of a subscribed topic once, in order, and nothing else")
    func routing() throws {
        let received = try Self.exchange(seed: Self.seed(), faults: .none, count: 50, qos: .atLeastOnce)
        #expect(received == Array(0..<50))
    }

    @Test("faults: QoS 1 never lost while connected, copies and replays come, and the same seed gives the same run")
    func faultsAreSeeded() throws {
        let seed = Self.seed()
        let first = try Self.exchange(seed: seed, faults: .heavy, count: 100, qos: .atLeastOnce)
        let second = try Self.exchange(seed: seed, faults: .heavy, count: 100, qos: .atLeastOnce)
        #expect(first == second, "same seed, same deliveries")
        #expect(Set(first) == Set(0..<100), "every QoS 1 message arrived, none from another topic")
        #expect(first.count > 100, "duplicates and replays arrived: \(first.count) deliveries")
        #expect(first != Array(0..<100).map { UInt8($0) }, "reordered")
        let lossy = try Self.exchange(seed: seed, faults: .heavy, count: 100, qos: .atMostOnce)
        #expect(Set(lossy).count < 100, "QoS 0 loses some")
        print("SimulatedBrokerTests: heavy faults: \(first.count) deliveries of 100 QoS 1 messages, \(Set(lossy).count) of 100 QoS 0 arrived")
    }

    @Test("a persistent session keeps its QoS 1 messages while its client is away; a clean one does not")
    func persistentSession() throws {
        let bench = Bench(seed: Self.seed(), faults: .none)
        let publisher = bench.broker.client("pub", loop: bench.loop)
        let away = bench.broker.client("box", persistent: true, loop: bench.loop)
        let clean = bench.broker.client("clean", loop: bench.loop)
        away.subscribe("m", qos: .atLeastOnce)
        clean.subscribe("m", qos: .atLeastOnce)
        for client in [publisher, away, clean] { client.start() }
        bench.run(for: 100_000_000)
        away.stop()
        clean.stop()
        for byte: UInt8 in 1...5 { try bench.publish(publisher, "m", byte) }
        bench.run(for: 100_000_000)
        let back = bench.broker.client("box", persistent: true, loop: bench.loop)
        var received: [UInt8] = []
        back.onMessage = { received += $0.payload }
        back.subscribe("m", qos: .atLeastOnce)
        back.start()
        bench.run(for: 100_000_000)
        #expect(back.sessionPresent)
        #expect(received == [1, 2, 3, 4, 5])
    }

    @Test("an outage disconnects every client and refuses publishes; after it the clients connect again by themselves")
    func outage() throws {
        let bench = Bench(seed: Self.seed(), faults: .none)
        let client = bench.broker.client("c", loop: bench.loop)
        var disconnects = 0
        client.onDisconnected = { _ in disconnects += 1 }
        client.start()
        bench.run(for: 100_000_000)
        #expect(client.isConnected)
        bench.broker.setDown(true)
        bench.run(for: 1_000_000_000)
        #expect(!client.isConnected && disconnects >= 2, "dropped, and its retries refused")
        #expect(throws: MQTTFailure.self) { try bench.publish(client, "t", 1) }
        bench.broker.setDown(false)
        bench.run(for: SimulatedBrokerClient.maximumRetry + 100_000_000)
        #expect(client.isConnected)
    }
}
