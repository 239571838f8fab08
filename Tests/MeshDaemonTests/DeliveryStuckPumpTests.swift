import Foundation
import Logging
import MeshCore
import MeshCrypto
@testable import MeshDaemon
import NIOCore
import NIOPosix
import SessionMesh
import Testing

/// The reliable pump of a peer that does not read waits for that peer's write; the channel
/// events of the other peers do not wait behind it (the activation starts the pump in a task of
/// its own).
@Suite("Delivery stuck pump")
struct DeliveryStuckPumpTests {
    /// A channel layer with two paired, active peers: writes to `stuck` never complete (a peer
    /// that stopped reading), writes to `honest` complete at once.
    final class TwoPeerChannels: DeliveryChannels, @unchecked Sendable {
        let deviceID = DeviceID(publicKey: Array(repeating: 1, count: 32))
        let stuck = DeviceID(publicKey: Array(repeating: 2, count: 32))
        let honest = DeviceID(publicKey: Array(repeating: 3, count: 32))
        let clock: any MeshClock = SystemMeshClock()
        let eventLoop: any EventLoop
        let executor: EventLoopTaskExecutor
        let pending = Locked<[EventLoopPromise<Void>]>([])
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
            eventQueue.yield(peer == stuck ? "write stuck" : "write honest")
            guard peer == stuck, !released.withLock({ $0 }) else { return eventLoop.makeSucceededFuture(()) }
            let promise = eventLoop.makePromise(of: Void.self)
            pending.withLock { $0.append(promise) }
            return promise.futureResult
        }
        func sendStreamIfDraining(_ message: [UInt8], to peer: DeviceID) -> Bool { peer != stuck }
        func streamConnection(of peer: DeviceID) -> UInt64? { peer == stuck ? 1 : 2 }
        func linkEstimate(of peer: DeviceID) -> DeliveryLinkEstimate { DeliveryLinkEstimate(roundTripNanoseconds: nil, offsetNanoseconds: nil) }
        func pairedDevices() -> [DeliveryPairedDevice] {
            [DeliveryPairedDevice(deviceID: stuck, name: "stuck"), DeliveryPairedDevice(deviceID: honest, name: "honest")]
        }
        func resolvePairedPeer(_ text: String) throws -> DeviceID { text == stuck.description ? stuck : honest }
        func setInbound(_ handler: (any DeliveryInbound)?) {
            self.handler.withLock { $0 = handler }
            eventQueue.yield(handler == nil ? "removed" : "installed")
        }
        func inboundConsumed(bytes: Int) {}

        let released = Locked(false)

        /// Completes every write to the stuck peer started so far, and the later ones at once.
        func release() {
            released.withLock { $0 = true }
            for promise in pending.withLock({ $0 }) { promise.succeed() }
        }

        func activate(_ peer: DeviceID) {
            loop.execute { self.handler.withLock { $0 }?.channelEvent(.activated(peer)) }
        }
    }

    /// Waits for the channel layer's next event named `name`.
    static func next(_ name: String, in events: inout AsyncStream<String>.Iterator) async -> Bool {
        while let event = await events.next() {
            if event == name { return true }
        }
        return false
    }

    @Test func aPumpStuckOnAPeerThatDoesNotReadHoldsUpNoOtherPeersActivation() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let directory = try StoreTestDirectory()
        defer { directory.cleanUp() }
        let channels = TwoPeerChannels(loop: group.next())
        let store = try DeliveryStore.open(path: directory.path())
        let router = DeliveryRouter(channels: channels, store: store, logger: Logger(label: "test.stuck-pump"))
        var events = channels.events.makeAsyncIterator()
        let run = Task { try await router.run() }
        #expect(await Self.next("installed", in: &events))
        // A reliable item for the stuck peer, queued while its channel is down.
        let metadata = SessionSyncMetadata(sessionID: UUID(), featureID: "demo", sourcePeerID: "app", eventID: UUID(), sequence: 1,
                                           causalTimestamp: Date(), payloadType: "text")
        let envelope = AnySessionSyncEnvelope(metadata: metadata, payload: Data("for the stuck peer".utf8))
        _ = try await router.send(envelope, encoded: try SessionWireCodec.encode(envelope), mode: 2, to: channels.stuck.description)
        // The stuck peer's channel comes up: its pump writes the item and waits for that write.
        channels.activate(channels.stuck)
        #expect(await Self.next("write stuck", in: &events))
        // The bound: a router whose channel events wait for that write would be unstuck here.
        let deadline = channels.loop.scheduleTask(in: .seconds(30)) { channels.release() }
        // The honest peer's channel comes up: its activation writes at once.
        channels.activate(channels.honest)
        #expect(await Self.next("write honest", in: &events))
        #expect(!channels.released.withLock { $0 }, "the honest peer's activation waited for the stuck peer's write")
        deadline.cancel()
        run.cancel()
        _ = await run.result
        channels.release()
        store.close()
        try await group.shutdownGracefully()
    }
}
