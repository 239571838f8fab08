import Foundation
import MeshLocalAPI
import NIOPosix
import SessionMesh
import SessionMeshClient

/// The two apps of `mesh-bench delivery` and what the receiving one has seen.
final class DeliveryBenchRun: @unchecked Sendable {
    struct Throughput {
        var sent: Int
        var live: Int
        var fallback: Int
        /// Sequences seen again without the redelivery mark (must stay 0).
        var duplicates: Int
        /// Sequences seen again marked as redeliveries (inbox items offered again after shed events).
        var redelivered: Int
        var shed: UInt64
        var missing: Int
        var seconds: Double
        var sentSeconds: Double
        var receivedPerSecond: Double { Double(sent - missing) / max(seconds, 1e-9) }
        var sentPerSecond: Double { Double(sent) / max(sentSeconds, 1e-9) }
    }

    /// What the receiving app recorded, keyed by the sequence in the payload's first 8 bytes.
    struct Seen {
        var arrivals = Arrivals()
        var live = 0
        var fallback = 0
        var duplicates = 0
        var redelivered = 0
        var shed: UInt64 = 0
        var pendingAcks: [UInt64] = []
        /// When the latest new sequence arrived (monotonic ns).
        var lastArrival: UInt64 = 0
        var waiter: (sequence: UInt64, continuation: CheckedContinuation<UInt64, Never>)?
    }

    let sender: MeshClient
    /// The receiving app of the throughput phases (feature "bench").
    let receiver: MeshClient
    /// The receiving app of the latency phase (feature "bench-latency"): its own connection and
    /// thread, consuming on its connection's loop unless `--pool-apps`.
    let latencyReceiver: MeshClient
    let payloadBytes: Int
    private let seen = Locked(Seen())
    private var nextSequence: UInt64 = 1
    private let session = UUID()
    /// Random version-4 event ids, as an app's `SessionSyncEngine` makes them — not `UUID()`,
    /// which on Linux opens, reads and closes /dev/urandom on every call (≈ 4 µs, more than the
    /// client library spends on a batched message). Random, not ordered: the daemons index event
    /// IDs, and IDs that grow with the sequence would insert at one end of each index and flatter
    /// the durable store.
    private var eventIDs = SessionEventIDGenerator()
    /// The latency receiver's own loop (as a separate app process would have its own thread).
    private let latencyGroup: MultiThreadedEventLoopGroup

    /// Where the sending app's code runs (nil: Swift's cooperative pool).
    private let senderExecutor: (any TaskExecutor)?

    private init(sender: MeshClient, receiver: MeshClient, latencyReceiver: MeshClient,
                 latencyGroup: MultiThreadedEventLoopGroup, settings: DeliveryBenchmark.Settings) {
        self.sender = sender
        self.receiver = receiver
        self.latencyReceiver = latencyReceiver
        self.latencyGroup = latencyGroup
        self.payloadBytes = settings.payloadBytes
        self.senderExecutor = settings.appsOnPool ? nil : sender.taskExecutor
    }

    /// Pairs A with B, waits for the channel and for B's apps to be reachable from A, and starts
    /// the receiving apps.
    ///
    /// Where the apps' code runs (unless `--pool-apps`): the sender on its connection's loop
    /// (`MeshClient.taskExecutor`) in every phase; the latency receiver on its connection's loop
    /// (fewest thread wake-ups, what a latency-sensitive app does); the throughput receiver on
    /// Swift's cooperative pool, in parallel with its connection's reads — a consumer on the
    /// loop delays its own reads, and at full rate the daemon's slow-reader policy then sheds
    /// realtime events (see docs/CLIENT.md).
    static func prepare(a: BenchDaemon, b: BenchDaemon, settings: DeliveryBenchmark.Settings) async throws -> DeliveryBenchRun {
        try await BenchMain.pair(a, b)
        let sender = try await MeshClient.connect(socketPath: a.socketPath)
        let receiver = try await MeshClient.connect(socketPath: b.socketPath)
        let latencyGroup = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let latencyReceiver = try await MeshClient.connect(socketPath: b.socketPath, eventLoopGroup: latencyGroup)
        let run = DeliveryBenchRun(sender: sender, receiver: receiver, latencyReceiver: latencyReceiver,
                                   latencyGroup: latencyGroup, settings: settings)
        let incoming = try await receiver.attach(features: ["bench"], app: "bench-receiver")
        Task { await run.receive(incoming.events) }
        Task { await run.ackLoop() }
        let latencyIncoming = try await latencyReceiver.attach(features: ["bench-latency"], app: "bench-latency-receiver")
        Task(executorPreference: settings.appsOnPool ? nil : latencyReceiver.taskExecutor) { await run.receive(latencyIncoming.events) }
        // The callback phases' receivers: handlers on the same two connections' loops.
        _ = try await receiver.attach(features: ["bench-callbacks"], app: "bench-callback-receiver") { run.handle($0) }
        _ = try await latencyReceiver.attach(features: ["bench-latency-callbacks"], app: "bench-callback-latency-receiver") { run.handle($0) }
        for feature in ["bench", "bench-latency", "bench-callbacks", "bench-latency-callbacks"] {
            try await awaitReachable(feature, from: sender)
        }
        return run
    }

    /// Attaches `client` to `feature` and waits (≤ 10 s) until an app of it is reachable on B.
    private static func awaitReachable(_ feature: String, from client: MeshClient) async throws {
        let presence = try await client.attach(features: [feature], app: "bench-sender")
        guard !presence.peers.contains(where: \.reachable) else { return }
        let reachable = try await withTimeout(10) {
            for await event in presence.events {
                if case .reachability(let change) = event, change.featureID == feature, change.reachable { return true }
            }
            return false
        }
        guard reachable == true else { throw BenchError("the receiving app of \(feature) never became reachable from A") }
    }

    func close() async {
        await sender.close()
        await receiver.close()
        await latencyReceiver.close()
        try? await latencyGroup.shutdownGracefully()
    }

    // MARK: - Phases

    /// Runs `body` on the sending client's loop (`MeshClient.taskExecutor`), or on the
    /// cooperative pool with `--pool-apps`.
    func onSenderLoop<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        try await withTaskExecutorPreference(senderExecutor) { try await body() }
    }

    /// One message in flight at a time: nanoseconds from the send call to the receiving app.
    ///
    /// The receiving app notes each arrival's time itself; the sender looks it up once its send
    /// returned (waiting if it has not arrived yet). A child task awaiting the arrival next to the
    /// send (`async let`) was created and first run on the sender's loop before the request was
    /// written, and so counted in every sample.
    func latency(count: Int) async throws -> [UInt64] {
        try await sequentialLatency(count: count, feature: "bench-latency") { envelope in
            try await self.sender.send(envelope: envelope, mode: .realtimeBestEffort)
        }
    }

    /// Like `latency(count:)` with the callback API at both ends: the sender calls
    /// `send(envelope:mode:to:completion:)` (no task per message) and the receiving app is an
    /// `attach(…onEvent:)` handler on its connection's loop (no stream, no task to resume).
    func callbackLatency(count: Int) async throws -> [UInt64] {
        let sender = self.sender
        return try await sequentialLatency(count: count, feature: "bench-latency-callbacks") { envelope in
            let reply: Result<MeshSendReply, MeshClientError> = await withCheckedContinuation { continuation in
                do throws(MeshClientError) {
                    try sender.send(envelope: envelope, mode: .realtimeBestEffort) { continuation.resume(returning: $0) }
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
            _ = try reply.get()
        }
    }

    /// `count` messages of `feature` (after 200 not counted), each sent by `send` once the one
    /// before has arrived: nanoseconds from just before `send` to the receiving app's arrival.
    private func sequentialLatency(count: Int, feature: String,
                                   send: (AnySessionSyncEnvelope) async throws -> Void) async throws -> [UInt64] {
        var samples: [UInt64] = []
        samples.reserveCapacity(count)
        for index in 0..<(count + 200) {
            let sequence = takeSequence()
            let envelope = makeEnvelope(sequence, feature: feature)
            let start = DispatchTime.now().uptimeNanoseconds
            try await send(envelope)
            let at = await arrivalTime(of: sequence)
            if index >= 200 { samples.append(at &- start) }
        }
        return samples
    }

    /// `count` sends with `window` in flight, one `send(envelope:mode:to:completion:)` call each,
    /// each completion sending the next (on the sender's loop, no task per message) while fewer
    /// than `lead` messages are on their way to the receiving app (else it tries again 200 µs
    /// later: realtime has no flow control of its own, see `batchedThroughput`); the receiving
    /// app is a handler (`attach(…onEvent:)`). Done when it has all (≤ 60 s). A send that fails
    /// fails the phase.
    func callbackThroughput(count: Int, mode: SessionDeliveryMode, window: Int, lead: Int) async throws -> Throughput {
        let envelopes = (0..<count).map { _ in makeEnvelope(takeSequence(), feature: "bench-callbacks") }
        let sender = self.sender
        let seen = self.seen
        let arrivedBefore = seen.withLock { $0.arrivals.count }
        let executor = senderExecutor
        return try await measureThroughput(envelopes) { envelopes in
            let progress = Locked((next: 0, answered: 0, failure: nil as MeshClientError?))
            try await withCheckedThrowingContinuation { (done: CheckedContinuation<Void, any Error>) in
                /// Counts one answer; the last one ends the phase (with the first failure, if any).
                @Sendable func answered(_ failure: MeshClientError?) {
                    let end: (last: Bool, failure: MeshClientError?) = progress.withLock { state in
                        state.answered += 1
                        if state.failure == nil { state.failure = failure }
                        return (state.answered == count, state.failure)
                    }
                    guard end.last else { return }
                    if let failure = end.failure { done.resume(throwing: failure) } else { done.resume() }
                }
                @Sendable func sendNext() {
                    let arrived = seen.withLock { $0.arrivals.count } - arrivedBefore
                    let index: Int? = progress.withLock { state in
                        guard state.next - arrived < lead else { return nil }
                        defer { state.next += 1 }
                        return state.next
                    }
                    guard let index else {
                        Task(executorPreference: executor) {
                            try? await Task.sleep(for: .microseconds(200))
                            sendNext()
                        }
                        return
                    }
                    guard index < count else { return }
                    do throws(MeshClientError) {
                        try sender.send(envelope: envelopes[index], mode: mode) { result in
                            if case .failure(let error) = result { answered(error) } else { answered(nil) }
                            sendNext()
                        }
                    } catch {
                        answered(error)
                        sendNext()
                    }
                }
                for _ in 0..<min(window, count) { sendNext() }
            }
        }
    }

    /// `count` sends with `window` in flight, one `send(envelope:mode:)` call each; done when the
    /// receiving app has all (≤ 60 s).
    func throughput(count: Int, mode: SessionDeliveryMode, window: Int) async throws -> Throughput {
        let envelopes = (0..<count).map { _ in makeEnvelope(takeSequence()) }
        return try await measureThroughput(envelopes) { envelopes in
            try await withThrowingTaskGroup(of: Void.self) { group in
                var index = 0
                for _ in 0..<min(window, count) {
                    let envelope = envelopes[index]
                    index += 1
                    group.addTask { try await self.sender.send(envelope: envelope, mode: mode) }
                }
                while try await group.next() != nil, index < count {
                    let envelope = envelopes[index]
                    index += 1
                    group.addTask { try await self.sender.send(envelope: envelope, mode: mode) }
                }
                try await group.waitForAll()
            }
        }
    }

    /// `count` sends in batches of `batch` (`send(envelopes:mode:)`), `inFlight` batches at a
    /// time, a batch starting only while fewer than `lead` messages are on their way to the
    /// receiving app (an app's flow control: realtime has none of its own, and a sender that
    /// outruns the receiving app only measures the slow-reader policy); done when the receiving
    /// app has all (≤ 60 s). A failed item fails the phase.
    func batchedThroughput(count: Int, mode: SessionDeliveryMode, batch: Int, inFlight: Int, lead: Int) async throws -> Throughput {
        let envelopes = (0..<count).map { _ in makeEnvelope(takeSequence()) }
        let batches = stride(from: 0, to: count, by: batch).map { Array(envelopes[$0..<min(count, $0 + batch)]) }
        let arrivedBefore = seen.withLock { $0.arrivals.count }
        let seen = self.seen
        return try await measureThroughput(envelopes) { _ in
            try await withThrowingTaskGroup(of: Void.self) { group in
                var next = 0
                func start() {
                    let items = batches[next]
                    next += 1
                    group.addTask {
                        for result in try await self.sender.send(envelopes: items, mode: mode) { _ = try result.get() }
                    }
                }
                /// Waits until fewer than `lead` messages sent are still on their way.
                func withinLead() async throws {
                    while next * batch - (seen.withLock { $0.arrivals.count } - arrivedBefore) > lead {
                        try await Task.sleep(for: .microseconds(200))
                    }
                }
                while next < min(inFlight, batches.count) { start() }
                while try await group.next() != nil, next < batches.count {
                    try await withinLead()
                    start()
                }
                try await group.waitForAll()
            }
        }
    }

    /// Runs `send` on `envelopes` (of fresh sequences) and waits until the receiving app has them.
    private func measureThroughput(_ envelopes: [AnySessionSyncEnvelope],
                                   send: ([AnySessionSyncEnvelope]) async throws -> Void) async throws -> Throughput {
        let count = envelopes.count
        let first = envelopes.first?.metadata.sequence ?? nextSequence
        // Only small figures are read while the apps run: copying `Seen` (its dictionary holds
        // every arrival) every poll would cost the receiving app more than the messages do.
        let before = seen.withLock { (arrived: $0.arrivals.count, live: $0.live, fallback: $0.fallback, duplicates: $0.duplicates, redelivered: $0.redelivered, shed: $0.shed) }
        let start = DispatchTime.now().uptimeNanoseconds
        try await send(envelopes)
        let sentAt = DispatchTime.now().uptimeNanoseconds
        let range = first..<(first + UInt64(count))
        var lastArrival = sentAt
        let deadline = Date().addingTimeInterval(60)
        var missing = count
        while Date() < deadline {
            let (arrived, latest) = seen.withLock { ($0.arrivals.count, $0.lastArrival) }
            missing = max(0, count - (arrived - before.arrived))
            lastArrival = max(latest, sentAt)
            if missing == 0 { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        if missing > 0 {
            // Count exactly which sequences of this phase never arrived (once, at the end).
            missing = seen.withLock { seen in range.reduce(0) { $0 + (seen.arrivals[$1] == nil ? 1 : 0) } }
        }
        let after = seen.withLock { (live: $0.live, fallback: $0.fallback, duplicates: $0.duplicates, redelivered: $0.redelivered, shed: $0.shed) }
        return Throughput(sent: count, live: after.live - before.live, fallback: after.fallback - before.fallback,
                          duplicates: after.duplicates - before.duplicates, redelivered: after.redelivered - before.redelivered, shed: after.shed - before.shed, missing: missing,
                          seconds: Double(lastArrival &- start) / 1e9, sentSeconds: Double(sentAt &- start) / 1e9)
    }

    // MARK: - The receiving app

    private func receive(_ events: AsyncStream<MeshClientEvent>) async {
        for await event in events { handle(event) }
    }

    /// Notes an event's arrival (the receiving apps, streams and handlers alike).
    func handle(_ event: MeshClientEvent) {
        if case .eventsDropped(let count) = event { seen.withLock { $0.shed += count } }
        guard case .envelope(let received) = event else { return }
        let now = DispatchTime.now().uptimeNanoseconds
        let payload = received.envelope.payload
        guard payload.count >= 8 else { return }
        let sequence = payload.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let waiter: CheckedContinuation<UInt64, Never>? = seen.withLock { seen in
            if seen.arrivals[sequence] == nil {
                seen.arrivals[sequence] = now
                seen.lastArrival = now
            } else if received.isRedelivery {
                seen.redelivered += 1
            } else {
                seen.duplicates += 1
            }
            if received.inboxID == 0 { seen.live += 1 } else {
                if received.mode == .realtimeBestEffort { seen.fallback += 1 }
                seen.pendingAcks.append(received.inboxID)
            }
            guard let waiting = seen.waiter, waiting.sequence == sequence else { return nil }
            seen.waiter = nil
            return waiting.continuation
        }
        waiter?.resume(returning: now)
    }

    private func ackLoop() async {
        while !Task.isCancelled {
            let ids = seen.withLock { seen in
                defer { seen.pendingAcks.removeAll() }
                return seen.pendingAcks
            }
            if ids.isEmpty {
                try? await Task.sleep(for: .milliseconds(5))
                continue
            }
            for start in stride(from: 0, to: ids.count, by: 10_000) {
                guard (try? await receiver.ackInbox(Array(ids[start..<min(ids.count, start + 10_000)]))) != nil else { return }
            }
        }
    }

    private func arrivalTime(of sequence: UInt64) async -> UInt64 {
        await withCheckedContinuation { continuation in
            let already: UInt64? = seen.withLock { seen in
                if let at = seen.arrivals[sequence] { return at }
                seen.waiter = (sequence, continuation)
                return nil
            }
            if let already { continuation.resume(returning: already) }
        }
    }

    private func takeSequence() -> UInt64 {
        defer { nextSequence += 1 }
        return nextSequence
    }

    private func makeEnvelope(_ sequence: UInt64, feature: String = "bench") -> AnySessionSyncEnvelope {
        var payload = Data(count: payloadBytes)
        for index in 0..<8 { payload[index] = UInt8(truncatingIfNeeded: sequence >> (56 - 8 * index)) }
        return AnySessionSyncEnvelope(
            metadata: SessionSyncMetadata(sessionID: session, featureID: feature, sourcePeerID: "bench-app", eventID: eventIDs.next(),
                                          sequence: sequence, causalTimestamp: Date(), payloadType: "bench"),
            payload: payload)
    }
}
