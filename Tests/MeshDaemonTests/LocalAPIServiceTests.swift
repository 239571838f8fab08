import Foundation
import Logging
import MeshDaemon
import NIOPosix
import ServiceLifecycle
import SessionMeshClient
import Testing

@Suite("LocalAPIService in a ServiceGroup")
struct LocalAPIServiceTests {
    /// Records that `onListening` ran.
    final class Flag: @unchecked Sendable {
        private let lock = NSLock()
        private var value = false
        func set() { lock.lock(); value = true; lock.unlock() }
        var isSet: Bool { lock.lock(); defer { lock.unlock() }; return value }
    }

    @Test func servesUntilGracefulShutdownThenRemovesTheSocket() async throws {
        let directory = try TemporaryFolder.make()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let configuration = DaemonConfiguration(stateDirectory: directory + "/state", socketPath: directory + "/meshd.sock")
        let listening = Flag()
        let service = LocalAPIService(configuration: configuration, controlPlane: FakeControlPlane(),
                                      eventLoopGroup: MultiThreadedEventLoopGroup.singleton, logger: Logger(label: "test"),
                                      onListening: { listening.set() })
        let group = ServiceGroup(configuration: ServiceGroupConfiguration(services: [.init(service: service)],
                                                                          logger: Logger(label: "test")))
        let running = Task { try await group.run() }
        try await pollUntil { listening.isSet }

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
