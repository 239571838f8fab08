#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MeshMQTT
import NIOCore
import SessionMesh

/// `mesh-bench compare-mqtt`: the same workloads through two release `meshd` paired on loopback
/// (lean apps on their local API) and through two bridged Mosquitto brokers (client → broker 1 →
/// bridge → broker 2 → client), from this one process with one clock, the two systems taking
/// turns in every round. Ratios are SessionMesh ÷ Mosquitto.
enum MQTTBridgeComparison {
    struct Settings {
        var rounds = 3
        var paced = 5_000
        var intervalMicros = 500
        var payloadBytes = 128
        var realtime = 50_000
        var reliable = 10_000
        var revisions = 100
        var lead = 1_024
    }

    static func run(arguments: [String]) {
        guard let settings = parse(arguments) else {
            print("""
                usage: mesh-bench compare-mqtt [--rounds N] [--paced N] [--interval MICROS] [--payload BYTES] [--realtime N]
                                               [--reliable N] [--revisions N]
                  --rounds     rounds; in each, every workload runs once on each system, in turn (default 3)
                  --paced      realtime messages paced --interval apart for the latency figures (default 5000, 500 µs)
                  --payload    payload bytes (default 128, at least 16)
                  --realtime   realtime messages of the full-speed burst (default 50000)
                  --reliable   reliable items, durable, with the receiver killed (kill -9) a quarter in (default 10000)
                  --revisions  states published while the receiver is dead, for latest state after kill -9 (default 100)
                needs /usr/sbin/mosquitto, /usr/bin/mosquitto_sub and mosquitto_pub (Debian: mosquitto, mosquitto-clients)
                """)
            exit(2)
        }
        BenchMain.runToCompletion("compare-mqtt") { try await measure(settings) }
    }

    static func parse(_ arguments: [String]) -> Settings? {
        BenchFlags.parse(arguments, into: Settings()) { settings, flag, value in
            switch flag {
            case "--rounds": settings.rounds = value
            case "--paced": settings.paced = value
            case "--interval": settings.intervalMicros = value
            case "--payload": settings.payloadBytes = max(16, value)
            case "--realtime": settings.realtime = value
            case "--reliable": settings.reliable = value
            case "--revisions": settings.revisions = value
            default: return false
            }
            return true
        }
    }

    static func measure(_ s: Settings) async throws {
        let meshd = try BenchMain.meshdNextToBench()
        for tool in ["/usr/sbin/mosquitto", "/usr/bin/mosquitto_sub", "/usr/bin/mosquitto_pub"]
        where !FileManager.default.isExecutableFile(atPath: tool) {
            throw BenchError("\(tool) is missing (Debian: apt-get install mosquitto mosquitto-clients)")
        }
        // Broker 2 as Debian configures it (persistence on); broker 1 with the bridge, persistence
        // off as in a default bridge set-up. Topic QoS 1 on the bridge: QoS 0 stays QoS 0.
        let receiving = try BenchBroker(name: "bridge-2", persistence: true)
        defer { receiving.stop() }
        let sending = try BenchBroker(name: "bridge-1", persistence: false, extra: """
            connection bench-bridge
            address 127.0.0.1:\(receiving.port)
            topic bench/# out 1

            """)
        defer { sending.stop() }
        let realtimeMQTT = try await MQTTRawPair(publishPort: sending.port, subscribePort: receiving.port, topic: "bench/rt", qos: .atMostOnce)
        defer { realtimeMQTT.close() }
        let reliableMQTT = try await MQTTRawPair(publishPort: sending.port, subscribePort: receiving.port, topic: "bench/rel", qos: .atLeastOnce)
        defer { reliableMQTT.close() }

        let a = try await BenchDaemon(name: "cmq-a", executable: meshd.path, listen: "127.0.0.1:\(try BenchBroker.freePort())",
                                      extraArguments: ["--no-mdns"])
        defer { a.stop() }
        let b = try await BenchDaemon(name: "cmq-b", executable: meshd.path, listen: "127.0.0.1:\(try BenchBroker.freePort())",
                                      extraArguments: ["--no-mdns"])
        defer { b.stop() }
        try await BenchMain.pair(a, b)

        print("mesh-bench compare-mqtt: SessionMesh = app → meshd A → meshd B → app (lean apps, local API, \(meshd.build) build);")
        print("  Mosquitto = client → broker 1 (127.0.0.1:\(sending.port)) → bridge → broker 2 (127.0.0.1:\(receiving.port)) → client;")
        print("  \(s.payloadBytes)-byte payloads, \(s.rounds) rounds, the systems alternating first; CPU per message from /proc (daemons or brokers) and getrusage (apps, this process)")
        var table = ComparisonTable(systems: ["SessionMesh", "Mosquitto", "loopback UDP"])
        let interval = UInt64(s.intervalMicros) * 1_000
        var meshCPU = PhaseCPU([{ a.cpuSeconds() }, { b.cpuSeconds() }])
        var mqttCPU = PhaseCPU([{ sending.cpuSeconds() }, { receiving.cpuSeconds() }])
        let rate = 1e6 / Double(s.intervalMicros)

        for round in 0..<s.rounds {
            let order = round % 2 == 0 ? [0, 1] : [1, 0]
            let udp = try LoopbackUDPProbe.roundTrips(count: 5_000, warmup: 200, payloadBytes: s.payloadBytes)
            table.add("raw UDP ping-pong floor, one way p50 (round trip ÷ 2)", .micros, system: 2, ComparisonTable.percentile(udp, 0.5) / 2, round: round)
            for system in order {
                // Paced realtime latency.
                let latencies: [UInt64], missing: Int
                if system == 0 {
                    meshCPU.start()
                    let result = try LeanPacedProbe.run(sender: a.socketPath, receiver: b.socketPath, count: s.paced,
                                                        intervalNanoseconds: interval, payloadBytes: s.payloadBytes, feature: "cmq-paced-\(round)")
                    record(&table, "paced realtime", cpu: meshCPU.perMessage(s.paced), system: 0, round: round, rate: rate)
                    (latencies, missing) = (result.latencies, result.missing)
                } else {
                    mqttCPU.start()
                    let result = try realtimeMQTT.paced(count: s.paced, interval: .nanoseconds(Int64(interval)), bytes: s.payloadBytes, qos: .atMostOnce)
                    record(&table, "paced realtime", cpu: mqttCPU.perMessage(s.paced), system: 1, round: round, rate: rate)
                    (latencies, missing) = (result.latencies, result.missing)
                }
                for (name, p) in [("p50", 0.5), ("p90", 0.9), ("p99", 0.99)] {
                    table.add("paced realtime one-way \(name)", .micros, system: system, ComparisonTable.percentile(latencies, p), round: round)
                }
                table.add("paced realtime lost", .count, system: system, Double(missing), round: round)
            }
            for system in order {
                // Realtime at full speed.
                if system == 0 {
                    meshCPU.start()
                    let probe = try BlockingThroughputProbe.run(sender: a.socketPath, receiver: b.socketPath, count: s.realtime,
                                                                payloadBytes: s.payloadBytes, batch: 32, lead: s.lead, feature: "cmq-rt-\(round)")
                    record(&table, "realtime full speed", cpu: meshCPU.perMessage(s.realtime), system: 0, round: round, rate: nil)
                    table.add("realtime throughput", .rate, system: 0, probe.throughput.receivedPerSecond, round: round)
                    table.add("realtime full speed lost", .count, system: 0, Double(probe.throughput.missing), round: round)
                } else {
                    mqttCPU.start()
                    let result = try realtimeMQTT.burst(count: s.realtime, bytes: s.payloadBytes, qos: .atMostOnce, lead: s.lead)
                    record(&table, "realtime full speed", cpu: mqttCPU.perMessage(s.realtime), system: 1, round: round, rate: nil)
                    table.add("realtime throughput", .rate, system: 1, result.perSecond, round: round)
                    table.add("realtime full speed lost", .count, system: 1, Double(result.missing), round: round)
                }
            }
            for system in order {
                // Reliable, durable, with the receiver killed a quarter in.
                let result = system == 0
                    ? try LeanKillProbe.run(sender: a.socketPath, receiver: b, count: s.reliable, payloadBytes: s.payloadBytes, lead: s.lead,
                                            killAfter: s.reliable / 4, feature: "cmq-kill-\(round)")
                    : try AfterKillProbes.mqttKill(pair: reliableMQTT, receivePort: receiving.port, count: s.reliable, bytes: s.payloadBytes,
                                                   killAfter: s.reliable / 4, topic: "bench/kill/\(round)")
                table.add("reliable throughput across a receiver kill -9", .rate, system: system, result.perSecond, round: round)
                table.add("reliable items lost after the receiver's kill -9", .count, system: system, Double(result.lost), round: round)
                table.add("reliable items delivered twice (unmarked)", .count, system: system, Double(result.unmarkedDuplicates), round: round)
                table.add("reliable: kill -9 → first new item", .seconds, system: system, result.gap, round: round)
            }
            for system in order {
                // Latest state after kill -9.
                let result = system == 0
                    ? try AfterKillProbes.meshLatest(sender: a.socketPath, receiver: b, revisions: s.revisions, feature: "cmq-state-\(round)")
                    : try AfterKillProbes.mqttLatest(pair: reliableMQTT, sendPort: sending.port, receivePort: receiving.port,
                                                     revisions: s.revisions, topic: "bench/state/\(round)")
                if !result.reached { print("  round \(round + 1): \(system == 0 ? "SessionMesh" : "Mosquitto") never reached the latest state") }
                table.add("latest state: receiver restart → holds the last of \(s.revisions) states", .seconds, system: system, result.seconds, round: round)
                table.add("latest state: states handed to the restarted receiver", .count, system: system, Double(result.handed), round: round)
            }
        }
        table.printSummary()
    }

    /// The CPU figures of one phase: the daemons' or brokers' per message, and the apps'.
    private static func record(_ table: inout ComparisonTable, _ phase: String, cpu: (agents: Double, apps: Double), system: Int, round: Int, rate: Double?) {
        let at = rate.map { String(format: " (%.0f msg/s)", $0) } ?? ""
        table.add("\(phase)\(at) CPU per message, the two meshd / the two mosquitto", .microsPerMessage, system: system, cpu.agents, round: round)
        table.add("\(phase)\(at) CPU per message, apps", .microsPerMessage, system: system, cpu.apps, round: round)
    }
}
