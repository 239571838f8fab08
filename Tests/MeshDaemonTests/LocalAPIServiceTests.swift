import Foundation
import Logging
import MeshDaemon
import NIOPosix
import ServiceLifecycle
import SessionMeshClient
import Testing

@Suite("LocalAPIService in a ServiceGroup")
struct LocalAPIServiceTests {
    @Test func servesUntilGracefulShutdownThenRemovesTheSocket() async throws {
        let directory = try TemporaryFolder.make()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let configuration = DaemonConfiguration(stateDirectory: directory + "/state", socketPath: directory + "/meshd.sock")
        // `onListening` and the end of the group (a service that failed to start) each end this
        // wait: the test awaits the event rather than polling against a deadline.
        let (started, signal) = AsyncStream.makeStream(of: Bool.self)
        let service = LocalAPIService(configuration: configuration, controlPlane: FakeControlPlane(),
                                      eventLoopGroup: MultiThreadedEventLoopGroup.singleton, logger: Logger(label: "test"),
                                      onListening: { signal.yield(true) })
        let group = ServiceGroup(configuration: ServiceGroupConfiguration(services: [.init(service: service)],
                                                                          logger: Logger(label: "test")))
        let running = Task {
            defer { signal.yield(false) }
            try await group.run()
        }
        var events = started.makeAsyncIterator()
        try #require(await events.next() == true, "the local API listens")

        let client = try await MeshClient.connect(socketPath: configuration.socketPath)
        #expect(try await client.status().counters["api.connections.accepted"] == 1)
        let pending = Task { try await client.awaitPairing(code: FakeControlPlane.code) }

        await group.triggerGracefulShutdown()
        try await running.value
        #expect(!FileManager.default.fileExists(atPath: configuration.socketPath))
        let outcome = await pending.result
        #expect(throws: MeshClientError.self) { try outcome.get() }
        await client.close()
    }
}
