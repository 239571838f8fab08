import Foundation
import Logging
import MeshCrypto
import MeshLocalAPI
import NIOCore
import SessionMesh
import Testing
@testable import MeshDaemon

/// Every suite that starts daemons for the delivery tests, run one test at a time: a full
/// `swift test` on a 2-core machine already runs dozens of suites in parallel.
@Suite("Delivery integration", .serialized)
enum DeliveryIntegration {}

/// A node plus its delivery router and store, as meshd wires them.
final class RunningDaemon: Sendable {
    let running: RunningNode
    let router: DeliveryRouter
    let store: DeliveryStore
    let routerTask: Task<Void, any Error>

    init(running: RunningNode, router: DeliveryRouter, store: DeliveryStore, routerTask: Task<Void, any Error>) {
        self.running = running
        self.router = router
        self.store = store
        self.routerTask = routerTask
    }

    var node: MeshNode { running.node }
    var deviceID: DeviceID { running.node.deviceID }
    var id: String { deviceID.description }

    /// Router first, then the node, then the store (meshd's shutdown order).
    func stop() async {
        routerTask.cancel()
        _ = await routerTask.result
        await running.stop()
        store.close()
    }
}

/// Starts daemons (node + router) for a test and stops them all afterwards.
final class DeliveryTestBed: @unchecked Sendable {
    let nodes = NodeTestBed()
    private let lock = NSLock()
    private var daemons: [RunningDaemon] = []

    static func options() -> DeliveryRouterOptions {
        var options = DeliveryRouterOptions()
        options.retryInitial = 0.3
        options.closeWait = 2
        return options
    }

    /// Starts a daemon; `stateDirectory`/`port` reuse a stopped one's identity and address.
    func start(name: String, stateDirectory: String? = nil, port: Int = 0, clockOffset: Int64 = 0,
               options: DeliveryRouterOptions = DeliveryTestBed.options(),
               storeOptions: DeliveryStoreOptions = DeliveryStoreOptions()) async throws -> RunningDaemon {
        let folder = stateDirectory ?? nodes.temporaryFolder()
        let configuration = nodes.configuration(name: name, stateDirectory: folder, port: port, clockOffsetMilliseconds: clockOffset)
        let running = try await nodes.start(configuration)
        var storeOptions = storeOptions
        storeOptions.synchronous = .normal
        let store = try DeliveryRouter.openStore(stateDirectory: folder, options: storeOptions)
        let router = DeliveryRouter(node: running.node, store: store, options: options,
                                    logger: NodeTestBed.logger(name + ".delivery"))
        let task = Task { try await router.run() }
        let daemon = RunningDaemon(running: running, router: router, store: store, routerTask: task)
        lock.withLock { daemons.append(daemon) }
        return daemon
    }

    /// Starts two paired daemons with active channels (alice's router options, bob's state
    /// folder and store options as given).
    func pair(clockOffsetB: Int64 = 0, optionsA: DeliveryRouterOptions = DeliveryTestBed.options(),
              stateDirectoryB: String? = nil, storeOptionsB: DeliveryStoreOptions = DeliveryStoreOptions()) async throws -> (RunningDaemon, RunningDaemon) {
        let a = try await start(name: "alice", options: optionsA)
        let b = try await start(name: "bob", stateDirectory: stateDirectoryB, clockOffset: clockOffsetB, storeOptions: storeOptionsB)
        _ = try await nodes.pair(a.running, b.running)
        try await waitUntil("both channels active", timeout: 15) { await bothActive(a.running, b.running) }
        return (a, b)
    }

    /// A paired couple with an app (a `CollectingSink`) attached to `feature` on each side,
    /// once alice sees bob's app as reachable (so realtime goes out live).
    func pairWithApps(feature: String = "demo") async throws -> (RunningDaemon, RunningDaemon, CollectingSink, CollectingSink) {
        let (a, b) = try await pair()
        let sinkA = CollectingSink(), sinkB = CollectingSink()
        _ = await a.router.attach(features: [feature], sink: sinkA)
        _ = await b.router.attach(features: [feature], sink: sinkB)
        try await waitUntil("bob's app reachable from alice", timeout: 5) { sinkA.reachable(b.id, feature) }
        return (a, b, sinkA, sinkB)
    }

    /// Waits until each of `count` realtime sends from `sender` was acked in time or fell back
    /// to the outbox, and the outbox drained; returns the sender's counters then.
    func realtimeSettled(_ sender: RunningDaemon, count: Int) async throws -> [String: UInt64] {
        try await waitUntil("acks or fallbacks", timeout: 5) {
            let counters = await sender.router.counterValues()
            return (counters["delivery.realtime.acked"] ?? 0) + (counters["delivery.realtime.fallbacks"] ?? 0) == UInt64(count)
        }
        try await waitUntil("outbox drained", timeout: 5) { try await sender.router.queue().isEmpty }
        return await sender.router.counterValues()
    }

    func shutdown() async {
        let all = lock.withLock { defer { daemons = [] }; return daemons }
        for daemon in all { await daemon.stop() }
        await nodes.shutdown()
    }
}

/// Collects the events an attachment gets.
final class CollectingSink: DeliveryEventSink, @unchecked Sendable {
    private let lock = NSLock()
    private var events: [DeliveryEvent] = []

    func emit(_ event: DeliveryEvent) { lock.withLock { events.append(event) } }

    var all: [DeliveryEvent] { lock.withLock { events } }

    /// Envelope events decoded: (from, inboxID, redelivery, mode, envelope).
    var envelopes: [(from: String, inboxID: Int64, redelivery: Bool, mode: UInt8, envelope: AnySessionSyncEnvelope)] {
        all.compactMap {
            guard case .envelope(let from, let inboxID, let redelivery, let mode, let encoded) = $0,
                  let envelope = try? SessionWireCodec.decodeEnvelope(encoded) else { return nil }
            return (from, inboxID, redelivery, mode, envelope)
        }
    }

    /// Inbox ids of the envelope events, in the order they came (realtime envelopes left out).
    var inboxIDs: [Int64] { inboxIDs(markedOnly: false) }

    /// Those of them marked as redeliveries.
    var markedInboxIDs: [Int64] { inboxIDs(markedOnly: true) }

    private func inboxIDs(markedOnly: Bool) -> [Int64] {
        all.compactMap { event in
            guard case .envelope(_, let inboxID, let redelivery, _, _) = event, inboxID != 0,
                  redelivery || !markedOnly else { return nil }
            return inboxID
        }
    }

    var snapshots: [AnySessionSyncSnapshot] {
        all.compactMap {
            guard case .snapshot(_, let encoded) = $0 else { return nil }
            return try? SessionWireCodec.decodeSnapshot(encoded)
        }
    }

    func reachable(_ peer: String, _ feature: String) -> Bool {
        var state = false
        for case .reachability(let p, let f, let reachable, _) in all where p == peer && f == feature { state = reachable }
        return state
    }
}

enum RouterFixtures {
    static let session = UUID(uuidString: "6F9619FF-8B86-D011-B42D-00C04FC964FF")!

    static func envelope(_ text: String, sequence: UInt64, feature: String = "demo", session: UUID = session,
                         source: String = "app") throws -> (AnySessionSyncEnvelope, [UInt8]) {
        let metadata = SessionSyncMetadata(sessionID: session, featureID: feature, sourcePeerID: source, eventID: UUID(),
                                           sequence: sequence, causalTimestamp: Date(timeIntervalSince1970: 1_700_000_000),
                                           payloadType: "text")
        let envelope = AnySessionSyncEnvelope(metadata: metadata, payload: Data(text.utf8))
        return (envelope, try SessionWireCodec.encode(envelope))
    }

    static func snapshot(revision: UInt64, state: String, feature: String = "demo",
                         session: UUID = session) throws -> (AnySessionSyncSnapshot, [UInt8]) {
        let metadata = SessionSyncMetadata(sessionID: session, featureID: feature, sourcePeerID: "app", eventID: UUID(),
                                           sequence: 0, causalTimestamp: Date(timeIntervalSince1970: 1_700_000_000),
                                           payloadType: "state")
        let snapshot = AnySessionSyncSnapshot(metadata: metadata, revision: revision, state: Data(state.utf8))
        return (snapshot, try SessionWireCodec.encode(snapshot))
    }

    static func text(_ envelope: AnySessionSyncEnvelope) -> String { String(decoding: envelope.payload, as: UTF8.self) }
}

extension RunningDaemon {
    /// Stores `count` inbox items from peer "P" (payloads and sender sequences `first`…) straight
    /// in the daemon's store, as received and not handed to any app yet.
    func storeInboxItems(count: Int, from first: Int = 1) throws -> [InboxEntry] {
        let items = (first..<(first + count)).map { makeInboxItem($0) }
        let receipts = try store.inbox.receive(from: "P", items: items, at: storeTestEpoch)
        return zip(items, receipts).compactMap { item, receipt -> InboxEntry? in
            guard case .stored(let id) = receipt else { return nil }
            return InboxEntry(id: id, peer: "P", item: item, receivedAt: storeTestEpoch, deliveryCount: 0)
        }
    }
}
