import Foundation
import Logging
import MeshCore
import MeshMQTT
import NIOCore
import NIOPosix

/// The plain-MQTT side of the broker comparisons: a publishing client on one broker and a
/// subscribing client on another (or the same), each on its own event loop (as two processes
/// would have their own threads), both libmosquitto through `MeshMQTT`, the client meshd's relay
/// uses. Every payload carries its sequence (bytes 0–7) and the monotonic time it was published
/// at (bytes 8–15), so the subscriber measures one-way latency on the publisher's clock.
final class MQTTRawPair: @unchecked Sendable {
    /// What the subscriber saw in the current phase.
    private struct Seen {
        var arrived = ArrivalSet(count: 0)
        var duplicates = 0
        var latencies: [UInt64] = []
        var lastArrival: UInt64 = 0
        var probes = 0
    }

    let topic: String
    private let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
    private let publisherLoop: any EventLoop
    private let subscriberLoop: any EventLoop
    private let publisher: NIOLoopBoundBox<MQTTClient?>
    private let subscriber: NIOLoopBoundBox<MQTTClient?>
    private let seen = Locked(Seen())

    /// Connects the publisher to `publishPort` and the subscriber (at `qos`) to `subscribePort`,
    /// both on 127.0.0.1, and waits (≤ 10 s) until a probe published at QoS 1 arrives.
    init(publishPort: Int, subscribePort: Int, topic: String = "bench/raw", qos: MQTTQoS) async throws {
        self.topic = topic
        publisherLoop = group.next()
        subscriberLoop = group.next()
        let seen = self.seen
        let subscriberLoop = self.subscriberLoop, publisherLoop = self.publisherLoop
        subscriber = try await subscriberLoop.submit {
            let client = try MQTTClient(options: MQTTClientOptions(host: "127.0.0.1", port: subscribePort, useTLS: false,
                                                                   clientID: "bench-raw-sub-\(UUID().uuidString.prefix(8))"),
                                        password: nil, eventLoop: subscriberLoop, logger: Logger(label: "bench")) { event in
                guard case .message(let message) = event else { return }
                let now = DispatchTime.now().uptimeNanoseconds
                Self.record(message.payload, now: now, into: seen)
            }
            client.subscribe(topic, qos: qos)
            client.connect(offering: .v5)
            return NIOLoopBoundBox(client, eventLoop: subscriberLoop)
        }.get()
        publisher = try await publisherLoop.submit {
            let client = try MQTTClient(options: MQTTClientOptions(host: "127.0.0.1", port: publishPort, useTLS: false,
                                                                   clientID: "bench-raw-pub-\(UUID().uuidString.prefix(8))"),
                                        password: nil, eventLoop: publisherLoop, logger: Logger(label: "bench")) { _ in }
            client.connect(offering: .v5)
            return NIOLoopBoundBox(client, eventLoop: publisherLoop)
        }.get()
        let deadline = Date().addingTimeInterval(10)
        while seen.withLock({ $0.probes }) == 0 {
            guard Date() < deadline else {
                close()
                throw BenchError("raw MQTT: a message published on 127.0.0.1:\(publishPort) never reached the subscriber on 127.0.0.1:\(subscribePort)")
            }
            let publisher = self.publisher
            try? await publisherLoop.submit { try? publisher.value?.publish(topic: topic, payload: [UInt8](repeating: 0, count: 16), qos: .atLeastOnce) }.get()
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    func close() {
        let publisher = self.publisher, subscriber = self.subscriber
        try? publisherLoop.submit { publisher.value?.close(); publisher.value = nil }.wait()
        try? subscriberLoop.submit { subscriber.value?.close(); subscriber.value = nil }.wait()
        try? group.syncShutdownGracefully()
    }

    /// A payload of `bytes` (≥ 16): sequence `index + 1`, the time stamp filled in when sent.
    private static func payload(index: Int, bytes: Int) -> [UInt8] {
        var payload = [UInt8](repeating: 0x5a, count: max(16, bytes))
        withUnsafeBytes(of: UInt64(index + 1).bigEndian) { for (i, b) in $0.enumerated() { payload[i] = b } }
        return payload
    }

    private static func stamp(_ payload: inout [UInt8]) {
        withUnsafeBytes(of: DispatchTime.now().uptimeNanoseconds.bigEndian) { for (i, b) in $0.enumerated() { payload[8 + i] = b } }
    }

    private static func record(_ payload: [UInt8], now: UInt64, into seen: Locked<Seen>) {
        guard payload.count >= 16 else { return }
        let sequence = payload[0..<8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let sent = payload[8..<16].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        seen.withLock { state in
            guard sequence >= 1, Int(sequence) <= state.arrived.count else {
                state.probes += 1
                return
            }
            guard state.arrived.arrive(Int(sequence - 1)) else {
                state.duplicates += 1
                return
            }
            state.lastArrival = now
            state.latencies.append(now &- sent)
        }
    }

    /// What a phase measured: one-way latencies (ns) of the messages that arrived, how many did
    /// not, duplicates, and the rate at the subscriber from the first publish to the last arrival.
    struct Phase {
        var latencies: [UInt64]
        var missing: Int
        var duplicates: Int
        var perSecond: Double
    }

    private func reset(count: Int) {
        seen.withLock { $0 = Seen(arrived: ArrivalSet(count: count)) }
    }

    /// `count` messages of `bytes`, one every `interval`, published at `qos` on the publisher's
    /// loop at their scheduled times; waits ≤ 5 s after the last for stragglers.
    func paced(count: Int, interval: TimeAmount, bytes: Int, qos: MQTTQoS) throws -> Phase {
        reset(count: count)
        let publisher = self.publisher, loop = publisherLoop, topic = self.topic
        let start = DispatchTime.now().uptimeNanoseconds
        let done = loop.makePromise(of: Void.self)
        loop.execute {
            let origin = NIODeadline.now()
            @Sendable func send(_ index: Int) {
                var payload = Self.payload(index: index, bytes: bytes)
                Self.stamp(&payload)
                try? publisher.value?.publish(topic: topic, payload: payload, qos: qos)
                guard index + 1 < count else { return done.succeed() }
                loop.scheduleTask(deadline: origin + interval * Int64(index + 1)) { send(index + 1) }
            }
            send(0)
        }
        try done.futureResult.wait()
        return finish(count: count, start: start, settle: 5)
    }

    /// `count` messages of `bytes` at `qos` as fast as the subscriber takes them, with at most
    /// `lead` published and not yet received (the lean apps' flow control on the other side).
    func burst(count: Int, bytes: Int, qos: MQTTQoS, lead: Int) throws -> Phase {
        reset(count: count)
        let payloads = (0..<count).map { Self.payload(index: $0, bytes: bytes) }
        let publisher = self.publisher, loop = publisherLoop, topic = self.topic, seen = self.seen
        let start = DispatchTime.now().uptimeNanoseconds
        let done = loop.makePromise(of: Void.self)
        let deadline = NIODeadline.now() + .seconds(60)
        loop.execute {
            let next = Locked(0)
            @Sendable func pump() {
                let received = seen.withLock { $0.arrived.distinct }
                var sent = next.withLock { $0 }
                while sent < count, sent - received < lead {
                    var payload = payloads[sent]
                    Self.stamp(&payload)
                    try? publisher.value?.publish(topic: topic, payload: payload, qos: qos)
                    sent += 1
                }
                next.withLock { $0 = sent }
                if sent >= count || NIODeadline.now() > deadline { return done.succeed() }
                loop.scheduleTask(in: .microseconds(100)) { pump() }
            }
            pump()
        }
        try done.futureResult.wait()
        return finish(count: count, start: start, settle: 5)
    }

    /// Publishes one message on the publisher's loop.
    func publishOne(topic: String, payload: [UInt8], qos: MQTTQoS) throws {
        let publisher = self.publisher
        try publisherLoop.submit { try publisher.value?.publish(topic: topic, payload: payload, qos: qos) }.wait()
    }

    /// Hands `count` messages of `bytes` (sequence in bytes 0–7) to libmosquitto at once, which
    /// sends them as its in-flight window allows; returns once all are handed over.
    func publishAll(topic: String, count: Int, bytes: Int, qos: MQTTQoS) throws {
        let publisher = self.publisher
        try publisherLoop.submit {
            for index in 0..<count {
                var payload = Self.payload(index: index, bytes: bytes)
                Self.stamp(&payload)
                try publisher.value?.publish(topic: topic, payload: payload, qos: qos)
            }
        }.wait()
    }

    /// Waits until every message arrived or `settle` seconds passed without a new one.
    private func finish(count: Int, start: UInt64, settle: Double) -> Phase {
        var quietSince = Date()
        var last = -1
        while true {
            let distinct = seen.withLock { $0.arrived.distinct }
            if distinct >= count { break }
            if distinct != last {
                last = distinct
                quietSince = Date()
            } else if Date().timeIntervalSince(quietSince) > settle {
                break
            }
            usleep(1_000)
        }
        return seen.withLock { state in
            let seconds = Double(max(state.lastArrival, start) - start) / 1e9
            return Phase(latencies: state.latencies, missing: state.arrived.missing, duplicates: state.duplicates,
                         perSecond: Double(state.arrived.distinct) / max(seconds, 1e-9))
        }
    }
}
