import Foundation
import Logging
import MeshCore
import MeshMQTT
import NIOCore
import NIOPosix

/// `mesh-bench relay-client`: the relay's MQTT client (libmosquitto on a NIO loop, woken by its
/// poll(2) thread) against a Mosquitto this program starts on 127.0.0.1: round trips through the
/// broker at QoS 0 and QoS 1 (two clients on one loop, as in meshd) with their latency and this
/// process's CPU per message, and the CPU an idle connection costs.
enum RelayClientBenchmark {
    static func run(arguments: [String]) {
        let rounds = arguments.first.flatMap(Int.init) ?? 5000
        BenchMain.runToCompletion("relay-client") { try await measure(rounds: rounds) }
    }

    private static func measure(rounds: Int) async throws {
        let broker = try BenchBroker()
        defer { broker.stop() }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        let pong = Locked<EventLoopPromise<Void>?>(nil)
        let clients: (NIOLoopBoundBox<MQTTClient?>, NIOLoopBoundBox<MQTTClient?>) = try await loop.submit {
            let connected = Locked(0)
            func options(_ name: String) -> MQTTClientOptions {
                MQTTClientOptions(host: "127.0.0.1", port: broker.port, useTLS: false, clientID: name)
            }
            let responder = NIOLoopBoundBox<MQTTClient?>(nil, eventLoop: loop)
            let a = try MQTTClient(options: options("bench-a"), password: nil, eventLoop: loop, logger: Logger(label: "bench")) { event in
                if case .message = event { pong.withLock { $0 }?.succeed() }
                if case .connected = event { connected.withLock { $0 += 1 } }
            }
            let b = try MQTTClient(options: options("bench-b"), password: nil, eventLoop: loop, logger: Logger(label: "bench")) { event in
                guard case .message(let message) = event else { return }
                try? responder.value?.publish(topic: "bench/pong", payload: message.payload,
                                              qos: message.payload.first == 1 ? .atLeastOnce : .atMostOnce)
            }
            responder.value = b
            a.subscribe("bench/pong", qos: .atLeastOnce)
            b.subscribe("bench/ping", qos: .atLeastOnce)
            a.connect(offering: .v5)
            b.connect(offering: .v5)
            return (NIOLoopBoundBox(a, eventLoop: loop), NIOLoopBoundBox(b, eventLoop: loop))
        }.get()
        // Both connected and subscribed: a first ping comes back.
        for _ in 0..<100 {
            if try await roundTrip(loop, clients.0, pong, qos: .atLeastOnce, size: 64, timeout: .milliseconds(100)) != nil { break }
        }
        for qos in [MQTTQoS.atMostOnce, .atLeastOnce] {
            var samples: [Double] = []
            let before = CPUMeter.ownSeconds()
            for _ in 0..<rounds {
                guard let took = try await roundTrip(loop, clients.0, pong, qos: qos, size: 200, timeout: .seconds(2)) else {
                    throw BenchError("a round trip through the broker did not come back within 2 s")
                }
                samples.append(took)
            }
            let after = CPUMeter.ownSeconds()
            samples.sort()
            let perMessage = (after.total - before.total) * 1e6 / Double(rounds * 2)
            print(String(format: "relay-client QoS %d: %d round trips of 200 bytes, p50 %.0f µs, p99 %.0f µs; clients' CPU %.1f µs per message (system %.1f)",
                         qos.rawValue, rounds, samples[samples.count / 2] * 1e6, samples[samples.count * 99 / 100] * 1e6,
                         perMessage, (after.system - before.system) * 1e6 / Double(rounds * 2)))
        }
        let idleBefore = CPUMeter.ownSeconds()
        try await Task.sleep(for: .seconds(5))
        let idleAfter = CPUMeter.ownSeconds()
        print(String(format: "relay-client idle: two connected clients used %.2f ms of CPU in 5 s", (idleAfter.total - idleBefore.total) * 1e3))
        try await loop.submit { clients.0.value?.close(); clients.1.value?.close() }.get()
        try await group.shutdownGracefully()
    }

    /// One ping → pong; its seconds, or nil when it did not come back in time.
    private static func roundTrip(_ loop: any EventLoop, _ client: NIOLoopBoundBox<MQTTClient?>, _ pong: Locked<EventLoopPromise<Void>?>,
                                  qos: MQTTQoS, size: Int, timeout: TimeAmount) async throws -> Double? {
        let start = DispatchTime.now().uptimeNanoseconds
        let future: EventLoopFuture<Void> = try await loop.submit {
            let promise = loop.makePromise(of: Void.self)
            pong.withLock { $0 = promise }
            var payload = [UInt8](repeating: 0, count: size)
            payload[0] = UInt8(qos.rawValue)
            try? client.value?.publish(topic: "bench/ping", payload: payload, qos: qos)
            let deadline = loop.scheduleTask(in: timeout) { promise.fail(BenchError("timeout")) }
            promise.futureResult.whenComplete { _ in deadline.cancel() }
            return promise.futureResult
        }.get()
        do { try await future.get() } catch { return nil }
        return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    }
}
