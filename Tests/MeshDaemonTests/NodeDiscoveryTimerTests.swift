import Logging
import MeshCore
@testable import MeshDaemon
import MeshDiscovery
import NIOCore
import NIOEmbedded
import Testing

/// The node's repeating timers on virtual time: `NodeDiscoveryService`'s maintenance pass and
/// the node's timer pass run on an injected loop; here a testing loop advanced by hand.
@Suite("Node timers on virtual time")
struct NodeDiscoveryTimerTests {
    /// The node as `NodeDiscoveryService` sees it: counts maintenance passes, says when the
    /// node stops, and reports when discovery started and ended.
    final class Host: NodeDiscoveryHost {
        private struct State {
            var passes = 0
            var running = true
            var ended = false
            var updates: [DiscoveryAdvertisement?] = []
        }
        private let state = Locked(State())
        let started: AsyncStream<Void>
        private let startedQueue: AsyncStream<Void>.Continuation
        let advertisement: DiscoveryAdvertisement?

        init(advertisement: DiscoveryAdvertisement?) {
            self.advertisement = advertisement
            (started, startedQueue) = AsyncStream.makeStream(of: Void.self)
        }

        var passes: Int { state.withLock { $0.passes } }
        var ended: Bool { state.withLock { $0.ended } }
        func stop() { state.withLock { $0.running = false } }

        func wantedAdvertisement() async -> DiscoveryAdvertisement? { advertisement }
        func discoveryStarted(advertising advertisement: DiscoveryAdvertisement?,
                              updates: AsyncStream<DiscoveryAdvertisement?>.Continuation) async {
            startedQueue.yield()
        }
        func applyDiscovery(_ event: DiscoveryEvent) async {}
        func advertisementUpdated(_ advertisement: DiscoveryAdvertisement?, succeeded: Bool) async {}
        func discoveryEnded() async { state.withLock { $0.ended = true } }
        func maintainDiscoveryOnLoop() -> Bool {
            state.withLock {
                $0.passes += 1
                return $0.running
            }
        }
    }

    @Test("discovery's maintenance pass runs every 250 ms of virtual time and stops with the node")
    func maintenanceTimer() async throws {
        let loop = NIOAsyncTestingEventLoop()
        let discovery = FakePeerDiscovery()
        let host = Host(advertisement: nil)
        let service = NodeDiscoveryService(discovery: discovery, node: host, loop: loop, logger: Logger(label: "test"))
        let run = Task { await service.run() }
        var started = host.started.makeAsyncIterator()
        _ = await started.next()    // the timer is armed before the node hears discovery started

        await loop.advanceTime(by: .milliseconds(249))
        #expect(host.passes == 0)
        await loop.advanceTime(by: .milliseconds(1))
        #expect(host.passes == 1)
        await loop.advanceTime(by: .milliseconds(750))
        #expect(host.passes == 4)

        // The pass that finds the node stopped is the last one.
        host.stop()
        await loop.advanceTime(by: .milliseconds(250))
        #expect(host.passes == 5)
        await loop.advanceTime(by: .seconds(2))
        #expect(host.passes == 5)

        await discovery.stop()
        await run.value
        #expect(host.ended)
        try await loop.shutdownGracefully()
    }

    @Test("the timer stops at once when discovery's events end, however long the node runs on")
    func maintenanceTimerEndsWithDiscovery() async throws {
        let loop = NIOAsyncTestingEventLoop()
        let discovery = FakePeerDiscovery()
        let host = Host(advertisement: nil)
        let run = Task { await NodeDiscoveryService(discovery: discovery, node: host, loop: loop, logger: Logger(label: "test")).run() }
        var started = host.started.makeAsyncIterator()
        _ = await started.next()
        await loop.advanceTime(by: .milliseconds(500))
        #expect(host.passes == 2)
        await discovery.stop()
        await run.value
        #expect(host.ended)
        await loop.advanceTime(by: .seconds(10))
        #expect(host.passes == 2)
        try await loop.shutdownGracefully()
    }

    @Test("the node's timer pass runs every quarter keepalive interval, within 20…250 ms, until it says stop")
    func timerPass() async throws {
        #expect(LoopTicker.timerPassInterval(keepalive: 0.4) == .milliseconds(100))
        #expect(LoopTicker.timerPassInterval(keepalive: 0.01) == .milliseconds(20))
        #expect(LoopTicker.timerPassInterval(keepalive: 15) == .milliseconds(250))
        let loop = NIOAsyncTestingEventLoop()
        let passes = Locked(0)
        let task = LoopTicker.start(on: loop, every: LoopTicker.timerPassInterval(keepalive: 0.4)) {
            passes.withLock {
                $0 += 1
                return $0 < 3
            }
        }
        await loop.advanceTime(by: .milliseconds(99))
        #expect(passes.withLock { $0 } == 0)
        await loop.advanceTime(by: .milliseconds(201))
        #expect(passes.withLock { $0 } == 3)
        await loop.advanceTime(by: .seconds(1))
        #expect(passes.withLock { $0 } == 3)

        // Cancelled (the node stops): no pass after that.
        let cancelled = Locked(0)
        let other = LoopTicker.start(on: loop, every: .milliseconds(50)) {
            cancelled.withLock { $0 += 1 }
            return true
        }
        await loop.advanceTime(by: .milliseconds(100))
        other.cancel()
        await loop.advanceTime(by: .seconds(1))
        #expect(cancelled.withLock { $0 } == 2)
        _ = task
        try await loop.shutdownGracefully()
    }
}
