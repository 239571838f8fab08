import Foundation
import Logging
import MeshCore
import MeshCrypto
@testable import MeshDaemon
import NIOCore
import NIOPosix
import Testing

/// A router stops even while a peer does not read its connection: the tasks it started are
/// cancelled and awaited, and a stream write that never completes does not hold them up.
@Suite("Delivery router stop")
struct DeliveryRouterStopTests {
    /// A channel layer with one paired, active peer whose stream writes never complete (a peer
    /// that stopped reading), on a real event loop.
    final class StuckChannels: DeliveryChannels, @unchecked Sendable {
        let deviceID = DeviceID(publicKey: Array(repeating: 1, count: 32))
        let peer = DeviceID(publicKey: Array(repeating: 2, count: 32))
        let clock: any MeshClock = SystemMeshClock()
        let eventLoop: any EventLoop
        let executor: EventLoopTaskExecutor
        /// Stream writes started (never completed until `release`), and the router's handler.
        let writes = Locked<[EventLoopPromise<Void>]>([])
        let handler = Locked<(any DeliveryInbound)?>(nil)
        let (events, eventQueue) = AsyncStream.makeStream(of: String.self)

        init(loop: any EventLoop) {
            eventLoop = loop
            executor = EventLoopTaskExecutor(loop)
        }

        var loop: any EventLoop { eventLoop }
        var routerExecutor: UnownedSerialExecutor { eventLoop.executor.asUnownedSerialExecutor() }
        var taskExecutor: any TaskExecutor { executor }
        func sendDatagram(_ message: [UInt8], to peer: DeviceID, batched: Bool) throws {}
        func flushDatagrams() {}
        func sendStream(_ message: [UInt8], to peer: DeviceID, connection: UInt64?) throws -> EventLoopFuture<Void> {
            let promise = eventLoop.makePromise(of: Void.self)
            writes.withLock { $0.append(promise) }
            eventQueue.yield("write")
            return promise.futureResult
        }
        func sendStreamIfDraining(_ message: [UInt8], to peer: DeviceID) -> Bool { false }
        func streamConnection(of peer: DeviceID) -> UInt64? { 1 }
        func linkEstimate(of peer: DeviceID) -> DeliveryLinkEstimate { DeliveryLinkEstimate(roundTripNanoseconds: nil, offsetNanoseconds: nil) }
        func pairedDevices() -> [DeliveryPairedDevice] { [DeliveryPairedDevice(deviceID: peer, name: "peer")] }
        func resolvePairedPeer(_ text: String) throws -> DeviceID { peer }
        func setInbound(_ handler: (any DeliveryInbound)?) {
            self.handler.withLock { $0 = handler }
            eventQueue.yield(handler == nil ? "removed" : "installed")
        }
        func inboundConsumed(bytes: Int) {}

        let released = Locked(false)

        /// Completes every write started so far (the test's cleanup, or its deadline).
        func release() {
            released.withLock { $0 = true }
            for promise in writes.withLock({ $0 }) { promise.succeed() }
        }
    }

    /// Waits for the channel layer's next event named `name` (the router does what it does on
    /// its loop; nothing here sleeps).
    static func next(_ name: String, in events: inout AsyncStream<String>.Iterator) async -> Bool {
        while let event = await events.next() {
            if event == name { return true }
        }
        return false
    }

    @Test func theRouterStopsWhileAPeerDoesNotReadItsWritesAndAwaitsItsTasks() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let directory = try StoreTestDirectory()
        defer { directory.cleanUp() }
        let channels = StuckChannels(loop: group.next())
        let store = try DeliveryStore.open(path: directory.path())
        let router = DeliveryRouter(channels: channels, store: store, logger: Logger(label: "test.stop"))
        var events = channels.events.makeAsyncIterator()
        let run = Task { try await router.run() }
        #expect(await Self.next("installed", in: &events))
        // The peer's channel comes up: the activation's presence write never completes.
        channels.loop.execute { channels.handler.withLock { $0 }?.channelEvent(.activated(channels.peer)) }
        #expect(await Self.next("write", in: &events))
        // An app attaches: the router queues its presence on the stuck connection and the
        // attach answers without waiting for that write.
        _ = await router.attach(features: ["demo"], sink: CollectingSink())
        #expect(await Self.next("write", in: &events))
        // The bound: a router that waited for the writes would be unstuck here, and fail below.
        let deadline = channels.loop.scheduleTask(in: .seconds(30)) { channels.release() }
        run.cancel()
        _ = await run.result
        deadline.cancel()
        #expect(!channels.released.withLock { $0 }, "run() returned without the writes completing")
        #expect(await router.tasks.count == 0, "every task the router started ended before run() returned")
        #expect(channels.writes.withLock { $0.count } == 2)
        channels.release()
        store.close()
        try await group.shutdownGracefully()
    }

    @Test func trackedTasksAreForgottenWhenTheyEndAndCancelledWhenTaken() async {
        var tasks = TrackedTasks()
        let (gate, opener) = AsyncStream.makeStream(of: Void.self)
        var ids: [UInt64] = []
        for _ in 0..<3 {
            tasks.add { id in
                ids.append(id)
                return Task { for await _ in gate {} }
            }
        }
        #expect(ids == [0, 1, 2] && tasks.count == 3)
        tasks.ended(1)
        tasks.ended(7)
        #expect(tasks.count == 2)
        let taken = tasks.takeAll()
        #expect(taken.count == 2 && tasks.count == 0)
        #expect(taken.allSatisfy { $0.isCancelled })
        opener.finish()
        for task in taken { await task.value }
    }
}
