import Foundation
import MeshLocalAPI
import NIOCore
import NIOPosix
import SessionMesh
import SessionMeshClient

/// `mesh-bench delivery`: two real `meshd` on 127.0.0.1, paired, and two apps in this process
/// (one attached to each daemon): app → A → B → app.
///
/// Measures realtime one-way latency (sequential, one message in flight; both apps share this
/// process's monotonic clock), realtime and reliable throughput (pipelined sends, counted when
/// the receiving app has them; reliable items are durable in A's outbox and B's inbox and acked
/// by the app), the raw loopback UDP round trip timed the same way, and each daemon's RSS.
/// Realtime latency and throughput are also measured with lean apps (blocking sockets, no NIO
/// or Swift concurrency: `BlockingDeliveryProbe`, `BlockingThroughputProbe`), the daemons' share.
enum DeliveryBenchmark {
    struct Settings {
        var latencyMessages = 5_000
        var realtimeMessages = 100_000
        var reliableMessages = 20_000
        var window = 256
        var batch = 32
        var batchesInFlight = 8
        var batchLead = 1024
        var payloadBytes = 128
        /// Run the apps' Swift code on Swift's cooperative pool instead of their client's loop.
        var appsOnPool = false
    }

    static func run(arguments: [String]) {
        guard let settings = parse(arguments) else {
            print("""
                usage: mesh-bench delivery [--latency N] [--realtime N] [--reliable N] [--window N] [--batch N] [--batches N] [--lead N] [--payload BYTES]
                  --latency   sequential realtime messages for the latency figures (default 5000)
                  --realtime  pipelined realtime messages for throughput (default 100000)
                  --reliable  pipelined reliable messages for throughput (default 20000)
                  --window    sends in flight at once (default 256)
                  --batch     envelopes per send(envelopes:) call in the batched realtime phase (default 32)
                  --batches   batches in flight at once in that phase (default 8)
                  --lead      in that phase, start a batch only while fewer messages than this are on their way
                              to the receiving app (default 1024)
                  --payload   payload bytes (default 128)
                  --pool-apps run the sending app and the latency phase's receiving app on Swift's cooperative
                              pool, not on their connection's loop (MeshClient.taskExecutor; the pool costs
                              about two thread wake-ups more per message)
                meshd must be built next to mesh-bench with the same flags (make bench: swift build -c release --static-swift-stdlib).
                """)
            exit(2)
        }
        BenchMain.runToCompletion("delivery") { try await measure(settings) }
    }

    static func parse(_ arguments: [String]) -> Settings? {
        var settings = Settings()
        var index = 0
        while index < arguments.count {
            if arguments[index] == "--pool-apps" {
                settings.appsOnPool = true
                index += 1
                continue
            }
            guard index + 1 < arguments.count, let value = Int(arguments[index + 1]), value > 0 else { return nil }
            switch arguments[index] {
            case "--latency": settings.latencyMessages = value
            case "--realtime": settings.realtimeMessages = value
            case "--reliable": settings.reliableMessages = value
            case "--window": settings.window = value
            case "--batch": settings.batch = value
            case "--batches": settings.batchesInFlight = value
            case "--lead": settings.batchLead = value
            case "--payload": settings.payloadBytes = max(8, value)
            default: return nil
            }
            index += 2
        }
        return settings
    }

    static func measure(_ settings: Settings) async throws {
        let (meshd, build) = try BenchMain.meshdNextToBench()
        let a = try await BenchDaemon(name: "bench-a", executable: meshd)
        defer { a.stop() }
        let b = try await BenchDaemon(name: "bench-b", executable: meshd)
        defer { b.stop() }
        let bench = try await DeliveryBenchRun.prepare(a: a, b: b, settings: settings)
        defer { Task { await bench.close() } }
        let idle = (a.residentKiB(), b.residentKiB())
        let idleAnonymous = (a.residentKiB("RssAnon"), b.residentKiB("RssAnon"))

        print("mesh-bench delivery: two meshd (\(build) build) on 127.0.0.1, app → A → B → app, \(settings.payloadBytes)-byte payloads"
              + (settings.appsOnPool ? ", apps on Swift's cooperative pool" : ", sender and latency receiver on their connection's loop"))
        let shared = [("meshd", a.swiftRuntimeShared ?? false), ("mesh-bench", BenchDaemon.mapsSharedSwiftRuntime("/proc/self/maps") ?? false)]
            .filter(\.1).map(\.0)
        if !shared.isEmpty {
            print("  note: \(shared.joined(separator: " and ")) \(shared.count == 1 ? "links" : "link") the Swift runtime as a shared library (built without --static-swift-stdlib); "
                  + "`make release` links it statically, as shipped, and its figures are the ones to compare with the targets")
        }
        var cpu = CPUMeter(a: a, b: b)
        let countersBefore = try await bench.receiver.status().counters
        let latency = try await bench.onSenderLoop { try await bench.latency(count: settings.latencyMessages) }
        let latencyCPU = cpu.lap(messages: settings.latencyMessages + 200)
        let countersAfter = try await bench.receiver.status().counters
        print("  CPU per message during the latency run: \(latencyCPU)")
        let delta = { (name: String) in (countersAfter[name] ?? 0) &- (countersBefore[name] ?? 0) }
        print("  acks during the latency run: B sent \(delta("delivery.realtime.ack_datagrams")) ack datagrams for "
              + "\(delta("delivery.realtime.received")) realtime items received (those read in one loop turn share a datagram)")
        _ = cpu.lap(messages: 1)
        let callbackLatency = try await bench.onSenderLoop { try await bench.callbackLatency(count: settings.latencyMessages) }
        let callbackLatencyCPU = cpu.lap(messages: settings.latencyMessages + 200)
        let udp = try LoopbackUDPProbe.roundTrips(count: settings.latencyMessages, warmup: 200, payloadBytes: settings.payloadBytes)
        print("realtime one-way latency (\(latency.count) sequential): p50 \(micros(percentile(latency, 0.50)))  p99 \(micros(percentile(latency, 0.99)))  "
              + "p999 \(micros(percentile(latency, 0.999)))  max \(micros(latency.max() ?? 0))   target p50 ≤ 60 µs, p99 ≤ 300 µs")
        print("realtime one-way latency with callbacks (send(…completion:) and an attach(…onEvent:) handler, \(callbackLatency.count) sequential): "
              + "p50 \(micros(percentile(callbackLatency, 0.50)))  p99 \(micros(percentile(callbackLatency, 0.99)))  "
              + "p999 \(micros(percentile(callbackLatency, 0.999)))  max \(micros(callbackLatency.max() ?? 0))   target p50 ≤ 60 µs, p99 ≤ 300 µs")
        print("  CPU per message during the callback latency run: \(callbackLatencyCPU)")
        print("raw loopback UDP round trip (\(udp.count), same timing): p50 \(micros(percentile(udp, 0.50)))  p99 \(micros(percentile(udp, 0.99)))  "
              + "p999 \(micros(percentile(udp, 0.999)))  (one way ≈ half: p50 \(micros(percentile(udp, 0.50) / 2)))")
        let relay = try NIORelayProbe.oneWay(count: settings.latencyMessages, warmup: 200, payloadBytes: settings.payloadBytes)
        print("for scale: the same hops relayed by bare NIO handlers (one event loop per relay, no framing, crypto or router; "
              + "\(relay.count)): p50 \(micros(percentile(relay, 0.50)))  p99 \(micros(percentile(relay, 0.99)))  "
              + "p999 \(micros(percentile(relay, 0.999)))")
        let lean = try BlockingDeliveryProbe.run(sender: a.socketPath, receiver: b.socketPath,
                                                 count: settings.latencyMessages, payloadBytes: settings.payloadBytes)
        print("realtime one-way latency with lean apps (blocking sockets, \(lean.samples.count) live, \(lean.notLive) not live): p50 \(micros(percentile(lean.samples, 0.50)))  "
              + "p99 \(micros(percentile(lean.samples, 0.99)))  p999 \(micros(percentile(lean.samples, 0.999)))   (the daemons' share)")
        let local = try await bench.localRoundTrips(count: 2_000)
        print("for scale: local API request round trip (hello, app ↔ A only): p50 \(micros(percentile(local, 0.50)))  p99 \(micros(percentile(local, 0.99)))")
        let plain = try BlockingLocalAPIProbe.roundTrips(socketPath: a.socketPath, count: 2_000)
        print("for scale: the same with a blocking socket client (daemon share): p50 \(micros(percentile(plain, 0.50)))  p99 \(micros(percentile(plain, 0.99)))")
        if let peer = try await bench.sender.peers().first {
            let ping = try await bench.sender.ping(deviceID: peer.deviceID, count: 1_000)
            for path in ping.paths {
                print("for scale: meshctl ping A → B over \(path.path.rawValue) (daemon to daemon round trip): p50 \(String(format: "%.1f", path.p50Microseconds ?? 0)) µs  p99 \(String(format: "%.1f", path.p99Microseconds ?? 0)) µs")
            }
        }
        _ = cpu.lap(messages: 1)
        let realtime = try await bench.onSenderLoop { try await bench.throughput(count: settings.realtimeMessages, mode: .realtimeBestEffort, window: settings.window) }
        let realtimeCPU = cpu.lap(messages: settings.realtimeMessages)
        print("realtime throughput (\(realtime.sent), \(settings.window) in flight): \(rate(realtime.receivedPerSecond)) at the receiving app "
              + "(\(realtime.live) live datagrams, \(realtime.fallback) via the durable fallback, \(realtime.duplicates) seen twice unmarked, \(realtime.redelivered) redelivered (marked), \(realtime.shed) events shed by the slow-reader policy, \(realtime.missing) missing after \(seconds(realtime.seconds))); "
              + "sender side \(rate(realtime.sentPerSecond))   target ≥ 100000 msgs/s")
        print("  CPU per message during realtime throughput: \(realtimeCPU)")
        print("  per core: \(cpu.perCore())")
        let callbacks = try await bench.onSenderLoop { try await bench.callbackThroughput(count: settings.realtimeMessages, mode: .realtimeBestEffort,
                                                                                            window: settings.window, lead: settings.batchLead) }
        let callbacksCPU = cpu.lap(messages: settings.realtimeMessages)
        print("realtime throughput with callbacks (send(…completion:), \(callbacks.sent), \(settings.window) in flight, ≤ \(settings.batchLead) unreceived, an attach(…onEvent:) handler): \(rate(callbacks.receivedPerSecond)) at the receiving app "
              + "(\(callbacks.live) live datagrams, \(callbacks.fallback) via the durable fallback, \(callbacks.duplicates) seen twice unmarked, \(callbacks.redelivered) redelivered (marked), \(callbacks.shed) events shed by the slow-reader policy, \(callbacks.missing) missing after \(seconds(callbacks.seconds))); "
              + "sender side \(rate(callbacks.sentPerSecond))   target ≥ 100000 msgs/s")
        print("  CPU per message during realtime throughput with callbacks: \(callbacksCPU)")
        print("  per core: \(cpu.perCore())")
        let batched = try await bench.onSenderLoop { try await bench.batchedThroughput(count: settings.realtimeMessages, mode: .realtimeBestEffort,
                                                        batch: settings.batch, inFlight: settings.batchesInFlight, lead: settings.batchLead) }
        let batchedCPU = cpu.lap(messages: settings.realtimeMessages)
        print("realtime throughput with send(envelopes:) (\(batched.sent), batches of \(settings.batch), \(settings.batchesInFlight) in flight, ≤ \(settings.batchLead) unreceived): \(rate(batched.receivedPerSecond)) at the receiving app "
              + "(\(batched.live) live, \(batched.fallback) via the durable fallback, \(batched.duplicates) seen twice unmarked, \(batched.redelivered) redelivered (marked), \(batched.shed) shed, \(batched.missing) missing after \(seconds(batched.seconds))); "
              + "sender side \(rate(batched.sentPerSecond))   target ≥ 100000 msgs/s")
        print("  CPU per message during batched realtime throughput: \(batchedCPU)")
        print("  per core: \(cpu.perCore())")
        _ = cpu.lap(messages: 1)
        let leanProbe = try BlockingThroughputProbe.run(sender: a.socketPath, receiver: b.socketPath, count: settings.realtimeMessages,
                                                       payloadBytes: settings.payloadBytes, batch: settings.batch, lead: settings.batchLead)
        let leanRate = leanProbe.throughput
        let leanRateCPU = cpu.lap(messages: settings.realtimeMessages)
        print("realtime throughput with lean apps (blocking sockets, \(leanRate.sent), \(settings.batch) sends per write, ≤ \(settings.batchLead) unreceived): "
              + "\(rate(leanRate.receivedPerSecond)) at the receiving app (\(leanRate.live) live, \(leanRate.fallback) via the durable fallback, "
              + "\(leanRate.duplicates) seen twice unmarked, \(leanRate.redelivered) redelivered (marked), \(leanProbe.notSent) replies not `sent`, \(leanRate.missing) missing after \(seconds(leanRate.seconds)))   (the daemons' share)")
        print("  CPU per message with lean apps: \(leanRateCPU) (apps: encoding up front included)")
        print("  per core: \(cpu.perCore())")
        print("  (per core: the throughput target's unit, target ≥ 100 k msgs/s per core; derived, 1 s ÷ each daemon's CPU per message; "
              + "the msgs/s above are end to end, both daemons and both apps sharing this machine's \(ProcessInfo.processInfo.activeProcessorCount) CPUs)")
        // The probe's threads have ended: start the next lap without their counts.
        try await Task.sleep(for: .milliseconds(100))
        _ = cpu.lap(messages: 1)
        let reliable = try await bench.onSenderLoop { try await bench.throughput(count: settings.reliableMessages, mode: .reliableEventually, window: settings.window) }
        let reliableCPU = cpu.lap(messages: settings.reliableMessages)
        print("reliable throughput, durable at both ends (\(reliable.sent), \(settings.window) in flight): \(rate(reliable.receivedPerSecond)) at the receiving app (acked), "
              + "\(reliable.duplicates) seen twice unmarked, \(reliable.redelivered) redelivered (marked), \(reliable.shed) shed (offered again to the app), \(reliable.missing) missing after \(seconds(reliable.seconds)); sender side \(rate(reliable.sentPerSecond)) durable sends   target ≥ 10000 msgs/s")
        print("  CPU per message during reliable throughput: \(reliableCPU)")
        let after = (a.residentKiB(), b.residentKiB())
        print("RSS: A \(mebibytes(idle.0)) idle → \(mebibytes(after.0)) after; B \(mebibytes(idle.1)) idle → \(mebibytes(after.1)) after   target idle ≤ 30 MB")
        print("  of which the daemons' own (anonymous) memory when idle: A \(mebibytes(idleAnonymous.0)), B \(mebibytes(idleAnonymous.1)); the rest are pages of the binary and libraries, more when they are all in the page cache")
        // What a burst leaves behind: the daemons are idle again, their ticks keep running.
        try await Task.sleep(for: .seconds(3))
        let settled = (a.residentKiB(), b.residentKiB()), settledAnonymous = (a.residentKiB("RssAnon"), b.residentKiB("RssAnon"))
        print("  3 s after the last phase, idle again: A \(mebibytes(settled.0)) (own \(mebibytes(settledAnonymous.0))), B \(mebibytes(settled.1)) (own \(mebibytes(settledAnonymous.1)))")
    }

    static func percentile(_ samples: [UInt64], _ p: Double) -> Double {
        guard !samples.isEmpty else { return 0 }
        let sorted = samples.sorted()
        return Double(sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.down)))])
    }

    static func micros(_ nanoseconds: Double) -> String { String(format: "%.1f", nanoseconds / 1000) + " µs" }
    static func rate(_ perSecond: Double) -> String { String(format: "%.0f", perSecond) + " msgs/s" }
    static func seconds(_ value: Double) -> String { String(format: "%.2f", value) + " s" }
    static func micros(_ nanoseconds: UInt64) -> String { micros(Double(nanoseconds)) }
    static func mebibytes(_ kib: Int?) -> String { kib.map { String(format: "%.1f", Double($0) / 1024) + " MiB" } ?? "?" }
}

