import Foundation
import Logging
import MeshCrypto
import MeshDiscovery
import MeshLocalAPI
import NIOCore
import NIOPosix
@testable import MeshDaemon
#if canImport(Glibc)
import Glibc
#endif

/// A MeshNode running in a task, on 127.0.0.1, with its own temporary state folder.
final class RunningNode: Sendable {
    let node: MeshNode
    let task: Task<Void, any Error>
    let stateDirectory: String
    let port: Int

    init(node: MeshNode, task: Task<Void, any Error>, stateDirectory: String, port: Int) {
        self.node = node
        self.task = task
        self.stateDirectory = stateDirectory
        self.port = port
    }

    var address: String { "127.0.0.1:\(port)" }

    /// Graceful stop: cancels `run()` and waits until it returned (sockets closed).
    func stop() async {
        task.cancel()
        _ = await task.result
    }
}

/// Starts nodes for a test and cleans everything up afterwards.
final class NodeTestBed: @unchecked Sendable {
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
    private let lock = NSLock()
    private var nodes: [RunningNode] = []
    private var folders: [String] = []
    private var stopped = false

    static func logger(_ label: String) -> Logger {
        var logger = Logger(label: label)
        logger.logLevel = ProcessInfo.processInfo.environment["MESH_TEST_LOG"].flatMap(Logger.Level.init(rawValue:)) ?? .critical
        return logger
    }

    /// A fresh temporary folder, removed at `shutdown()`.
    func temporaryFolder() -> String {
        var template = Array("/tmp/meshnode-test-XXXXXX".utf8CString)
        let path = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)) }
        lock.withLock { folders.append(path) }
        return path
    }

    func configuration(name: String, stateDirectory: String, port: Int = 0,
                       clockOffsetMilliseconds: Int64 = 0) -> DaemonConfiguration {
        var configuration = DaemonConfiguration(name: name, stateDirectory: stateDirectory,
                                                socketPath: stateDirectory + "/meshd.sock",
                                                listen: .init(host: "127.0.0.1", port: port),
                                                clockOffsetMilliseconds: clockOffsetMilliseconds,
                                                keepaliveInterval: 0.1, reachabilityLease: 2)
        configuration.channelTuning.reconnectInitial = 0.05
        configuration.channelTuning.reconnectMaximum = 0.5
        // These tests are of the channel and delivery layers between the pairs they make; the
        // device set (which would join every node paired with a common one) has tests of its own
        // with real daemons (`DeviceSetProcessTests`, `MeshdLabDeviceSetTests`) and runs in the
        // simulator. A test of the set in process turns it back on.
        configuration.deviceSet = false
        return configuration
    }

    /// Starts a node and waits (≤ 5 s) until it listens.
    func start(_ configuration: DaemonConfiguration, discovery: (any PeerDiscovery)? = nil) async throws -> RunningNode {
        let node = try MeshNode(configuration: configuration, logger: Self.logger(configuration.name), eventLoopGroup: group,
                                discovery: discovery)
        // Started on the node's own loop: a plain Task would wait for a cooperative-pool thread,
        // which CPU-heavy tests elsewhere in the process may hold for seconds.
        let task = Task(executorPreference: node.taskExecutor) { try await node.run() }
        let port = try await eventually("\(configuration.name) listening", timeout: 20) { await node.boundListenAddress?.port }
        let running = RunningNode(node: node, task: task, stateDirectory: configuration.stateDirectory, port: port)
        lock.withLock { nodes.append(running) }
        return running
    }

    /// Starts a node with a new state folder.
    func start(name: String, port: Int = 0, clockOffsetMilliseconds: Int64 = 0,
               tune: (inout DaemonConfiguration) -> Void = { _ in }) async throws -> RunningNode {
        var configuration = self.configuration(name: name, stateDirectory: temporaryFolder(), port: port,
                                               clockOffsetMilliseconds: clockOffsetMilliseconds)
        tune(&configuration)
        return try await start(configuration)
    }

    /// Stops every node, the event loops, and removes the folders.
    func shutdown() async {
        let (running, paths, first) = lock.withLock {
            defer { nodes = []; folders = []; stopped = true }
            return (nodes, folders, !stopped)
        }
        for node in running { await node.stop() }
        if first { try? await group.shutdownGracefully() }
        for path in paths { try? FileManager.default.removeItem(atPath: path) }
    }

    /// Pairs `joiner` with `inviter`; returns both sides' results.
    func pair(_ inviter: RunningNode, _ joiner: RunningNode) async throws -> (PairedDevice, PairedDevice) {
        let invitation = try await inviter.node.createPairingCode(validFor: 60)
        async let invited = inviter.node.awaitPairing(code: invitation.code)
        let joined = try await joiner.node.joinPairing(code: invitation.code, address: inviter.address)
        return (try await invited, joined)
    }
}

struct TimedOut: Error, CustomStringConvertible {
    var what: String
    var description: String { "timed out waiting for \(what)" }
}

/// Polls `probe` every 10 ms until it returns a value or `timeout` seconds pass.
///
/// The polling runs on an event loop, not on Swift's cooperative pool: CPU-heavy tests of other
/// suites can occupy the pool's threads (one per core) for seconds, and a deadline measured by a
/// task waiting for a pool thread would fail for reasons that have nothing to do with the node.
func eventually<T>(_ what: String, timeout: Double, _ probe: () async throws -> T?) async throws -> T {
    try await withTaskExecutorPreference(EventLoopTaskExecutor(MultiThreadedEventLoopGroup.singleton.next())) {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: .milliseconds(Int(timeout * 1000)))
        while clock.now < deadline {
            if let value = try await probe() { return value }
            try await Task.sleep(for: .milliseconds(10))
        }
        if let value = try await probe() { return value }
        throw TimedOut(what: what)
    }
}

/// Waits until `condition` holds (polling, bounded by `timeout`).
func waitUntil(_ what: String, timeout: Double, _ condition: () async throws -> Bool) async throws {
    _ = try await eventually(what, timeout: timeout) { try await condition() ? true : nil }
}

extension MeshNode {
    /// The channel state this node shows for `peer`.
    func channelState(of peer: DeviceID) async -> ChannelState? {
        await peers().first { $0.deviceID == peer.description }?.channel
    }
}

/// Whether both nodes show an active channel to each other.
func bothActive(_ a: RunningNode, _ b: RunningNode) async -> Bool {
    let forward = await a.node.channelState(of: b.node.deviceID)
    let backward = await b.node.channelState(of: a.node.deviceID)
    return forward == .active && backward == .active
}

/// A node's inbound handler for tests of a node without a router: messages and channel events
/// become streams (each message counts as handled at once).
final class InboundRecorder: DeliveryInbound {
    let messages: AsyncStream<InboundChannelMessage>
    let events: AsyncStream<PeerChannelEvent>
    private let messageQueue: AsyncStream<InboundChannelMessage>.Continuation
    private let eventQueue: AsyncStream<PeerChannelEvent>.Continuation

    init() {
        (messages, messageQueue) = AsyncStream.makeStream()
        (events, eventQueue) = AsyncStream.makeStream()
    }

    func receive(_ message: InboundChannelMessage) -> Bool {
        messageQueue.yield(message)
        return true
    }

    func channelEvent(_ event: PeerChannelEvent) { eventQueue.yield(event) }

    func inboundBurstEnded() {}
}

extension MeshNode {
    /// Installs a fresh `InboundRecorder` as this node's inbound handler (what arrived before
    /// goes to it first).
    func recordInbound() -> InboundRecorder {
        let recorder = InboundRecorder()
        handOff.setHandler(recorder)
        return recorder
    }
}
