#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MeshMQTT
import NIOCore
import SessionMesh
import SessionMeshClient

/// `mesh-bench relay`: two release `meshd` whose channel runs through one Mosquitto on 127.0.0.1
/// (no direct path works between them), next to the broker's own forwarding measured in the same
/// run by a minimal MQTT client (libmosquitto through `MeshMQTT`) publishing payloads of the same
/// size through the same broker: paced realtime one-way latency (relayed datagrams, QoS 0) and
/// reliable throughput durable at both ends (relayed stream, QoS 1) against raw QoS 1
/// publish → receive. The two take turns in every round. Ratios are relayed ÷ raw.
enum RelayComparison {
    struct Settings {
        var rounds = 5
        var paced = 2_000
        var intervalMicros = 500
        var payloadBytes = 128
        var reliable = 5_000
        var lead = 1_024
    }

    static func run(arguments: [String]) {
        let parsed = BenchFlags.parse(arguments, into: Settings()) { settings, flag, value in
            switch flag {
            case "--rounds": settings.rounds = value
            case "--paced": settings.paced = value
            case "--interval": settings.intervalMicros = value
            case "--payload": settings.payloadBytes = max(16, value)
            case "--reliable": settings.reliable = value
            default: return false
            }
            return true
        }
        guard let settings = parsed else { usage() }
        BenchMain.runToCompletion("relay") { try await measure(settings) }
    }

    private static func usage() -> Never {
        print("""
            usage: mesh-bench relay [--rounds N] [--paced N] [--interval MICROS] [--payload BYTES] [--reliable N]
              --rounds    rounds; in each, every workload runs once relayed and once raw, in turn (default 5)
              --paced     realtime messages paced --interval apart (default 2000, 500 µs)
              --payload   payload bytes (default 128, at least 16)
              --reliable  reliable items per round, durable at both ends and acked by the app (default 5000)
            needs /usr/sbin/mosquitto (Debian: mosquitto)
            """)
        exit(2)
    }

    static func measure(_ s: Settings) async throws {
        let meshd = try BenchMain.meshdNextToBench()
        let broker = try BenchBroker(name: "relay", persistence: true)
        defer { broker.stop() }
        let relay = { (user: String) in ["--no-mdns", "--relay", "mqtt://\(user)@127.0.0.1:\(broker.port)"] }
        let a = try await BenchDaemon(name: "rly-a", executable: meshd.path, extraArguments: relay("bench-a"))
        defer { a.stop() }
        let b = try await BenchDaemon(name: "rly-b", executable: meshd.path, extraArguments: relay("bench-b"))
        defer { b.stop() }
        try await BenchMain.pair(a, b)
        // Both move to ports the other never heard of (and mDNS is off): the only route left is
        // the broker.
        a.kill9()
        b.kill9()
        try a.restartBlocking()
        try b.restartBlocking()
        let took = try await waitForRelayPath(a, b)
        let realtimeMQTT = try await MQTTRawPair(publishPort: broker.port, subscribePort: broker.port, topic: "bench/rt", qos: .atMostOnce)
        defer { realtimeMQTT.close() }
        let reliableMQTT = try await MQTTRawPair(publishPort: broker.port, subscribePort: broker.port, topic: "bench/rel", qos: .atLeastOnce)
        defer { reliableMQTT.close() }

        print("mesh-bench relay: app → meshd A → Mosquitto (127.0.0.1:\(broker.port), plain MQTT, persistence on) → meshd B → app, lean apps, \(meshd.build) build;")
        print("  the channel came up through the broker \(String(format: "%.2f", took)) s after both restarted (meshctl peers: path relay);")
        print("  raw = one libmosquitto client publishing \(s.payloadBytes)-byte payloads through the same broker to another; \(s.rounds) rounds, the two alternating first")
        var table = ComparisonTable(systems: ["relayed", "raw MQTT"])
        let interval = UInt64(s.intervalMicros) * 1_000
        var meshCPU = PhaseCPU([{ a.cpuSeconds() }, { b.cpuSeconds() }, { broker.cpuSeconds() }])
        var rawCPU = PhaseCPU([{ broker.cpuSeconds() }])
        for round in 0..<s.rounds {
            for system in (round % 2 == 0 ? [0, 1] : [1, 0]) {
                let latencies: [UInt64], missing: Int, cpu: (agents: Double, apps: Double)
                if system == 0 {
                    meshCPU.start()
                    let result = try LeanPacedProbe.run(sender: a.socketPath, receiver: b.socketPath, count: s.paced,
                                                        intervalNanoseconds: interval, payloadBytes: s.payloadBytes, feature: "rly-paced-\(round)")
                    (latencies, missing, cpu) = (result.latencies, result.missing, meshCPU.perMessage(s.paced))
                    if result.notLive > 0 { print("  round \(round + 1): \(result.notLive) relayed realtime sends did not go out live") }
                } else {
                    rawCPU.start()
                    let result = try realtimeMQTT.paced(count: s.paced, interval: .nanoseconds(Int64(interval)), bytes: s.payloadBytes, qos: .atMostOnce)
                    (latencies, missing, cpu) = (result.latencies, result.missing, rawCPU.perMessage(s.paced))
                }
                for (name, p) in [("p50", 0.5), ("p90", 0.9), ("p99", 0.99)] {
                    table.add("paced realtime one-way \(name) (QoS 0)", .micros, system: system, ComparisonTable.percentile(latencies, p), round: round)
                }
                table.add("paced realtime lost", .count, system: system, Double(missing), round: round)
                table.add("paced realtime CPU per message, meshd ×2 + broker / broker", .microsPerMessage, system: system, cpu.agents, round: round)
                table.add("paced realtime CPU per message, apps", .microsPerMessage, system: system, cpu.apps, round: round)
            }
            for system in (round % 2 == 0 ? [0, 1] : [1, 0]) {
                let perSecond: Double, missing: Int, cpu: (agents: Double, apps: Double)
                if system == 0 {
                    meshCPU.start()
                    let probe = try BlockingThroughputProbe.run(sender: a.socketPath, receiver: b.socketPath, count: s.reliable,
                                                                payloadBytes: s.payloadBytes, batch: 32, lead: s.lead, mode: .reliableEventually,
                                                                feature: "rly-rel-\(round)")
                    (perSecond, missing, cpu) = (probe.throughput.receivedPerSecond, probe.throughput.missing + probe.notSent, meshCPU.perMessage(s.reliable))
                } else {
                    rawCPU.start()
                    let result = try reliableMQTT.burst(count: s.reliable, bytes: s.payloadBytes, qos: .atLeastOnce, lead: s.lead)
                    (perSecond, missing, cpu) = (result.perSecond, result.missing, rawCPU.perMessage(s.reliable))
                }
                table.add("reliable throughput (relayed: durable at both ends, acked; raw: QoS 1)", .rate, system: system, perSecond, round: round)
                table.add("reliable missing", .count, system: system, Double(missing), round: round)
                table.add("reliable CPU per message, meshd ×2 + broker / broker", .microsPerMessage, system: system, cpu.agents, round: round)
                table.add("reliable CPU per message, apps", .microsPerMessage, system: system, cpu.apps, round: round)
            }
        }
        let path = try await relayPath(a)
        table.printSummary()
        print("  the channel's path at the end: \(path ?? "none")")
        if let relayed = table.median("paced realtime one-way p50 (QoS 0)", system: 0), let raw = table.median("paced realtime one-way p50 (QoS 0)", system: 1) {
            print(String(format: "  target relayed p50 ≤ 1.3 × the broker's floor: %.2f × — %@", relayed / raw, relayed <= 1.3 * raw ? "met" : "missed"))
        }
        let rateName = "reliable throughput (relayed: durable at both ends, acked; raw: QoS 1)"
        if let relayed = table.median(rateName, system: 0), let raw = table.median(rateName, system: 1) {
            print(String(format: "  target reliable rate ≥ 0.8 × raw QoS 1: %.2f × — %@", relayed / raw, relayed >= 0.8 * raw ? "met" : "missed"))
        }
    }

    /// Waits (≤ 30 s) until both daemons see their channel active over the relay; seconds taken.
    private static func waitForRelayPath(_ a: BenchDaemon, _ b: BenchDaemon) async throws -> Double {
        let start = Date()
        while Date().timeIntervalSince(start) < 30 {
            let pathA = try? await relayPath(a), pathB = try? await relayPath(b)
            if let pathA, let pathB, pathA.contains("relay"), pathB.contains("relay") { return Date().timeIntervalSince(start) }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw BenchError("the channel between \(a.name) and \(b.name) did not come up through the broker within 30 s")
    }

    /// The path of `daemon`'s one active channel, as `meshctl peers` shows it; nil when none is active.
    private static func relayPath(_ daemon: BenchDaemon) async throws -> String? {
        let client = try await MeshClient.connect(socketPath: daemon.socketPath)
        defer { Task { await client.close() } }
        return try await client.peers().first { $0.channel.rawValue == "active" }?.path
    }
}
