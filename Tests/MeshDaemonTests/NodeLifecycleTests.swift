import Foundation
import Logging
import MeshLocalAPI
import ServiceLifecycle
import Testing
@testable import MeshDaemon

@Suite("Node lifecycle", .serialized)
struct NodeLifecycleTests {
    @Test func gracefulShutdownOfAServiceGroupClosesTheNode() async throws {
        let bed = NodeTestBed()
        defer { Task { await bed.shutdown() } }
        let folder = bed.temporaryFolder()
        let node = try MeshNode(configuration: bed.configuration(name: "alice", stateDirectory: folder),
                                logger: NodeTestBed.logger("alice"), eventLoopGroup: bed.group)
        let group = ServiceGroup(services: [node], logger: NodeTestBed.logger("group"))
        let running = Task(executorPreference: node.taskExecutor) { try await group.run() }
        let port = try await eventually("listening", timeout: 5) { await node.boundListenAddress?.port }
        await group.triggerGracefulShutdown()
        try await running.value
        // The port is free again: a new node binds it.
        let again = try await bed.start(bed.configuration(name: "alice", stateDirectory: folder, port: port))
        #expect(again.port == port)
        await #expect(throws: NodeError.self) { try await node.run() }   // a node runs once
        await bed.shutdown()
    }

    @Test func aTakenPortIsAClearError() async throws {
        let bed = NodeTestBed()
        defer { Task { await bed.shutdown() } }
        let alice = try await bed.start(name: "alice")
        let node = try MeshNode(configuration: bed.configuration(name: "bob", stateDirectory: bed.temporaryFolder(),
                                                                 port: alice.port),
                                logger: NodeTestBed.logger("bob"), eventLoopGroup: bed.group)
        do {
            try await node.run()
            Issue.record("binding a taken port must fail")
        } catch let error as NodeError {
            #expect(error.code == .listen)
            #expect(error.message.contains("\(alice.port)"))
        }
        await bed.shutdown()
    }
}
