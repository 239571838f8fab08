import Foundation
import Logging
import MeshLocalAPI
import NIOCore
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
        let port = try await eventually("listening", timeout: 20) { await node.boundListenAddress?.port }
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
    /// The UDP socket asks for a 4 MiB receive buffer (bursts of realtime datagrams overflowed
    /// the ≈ 208 KiB default on loopback, each loss a durable fallback copy); the kernel grants
    /// up to `net.core.rmem_max`, and reports twice what was set.
    @Test func theDatagramSocketGetsALargeReceiveBuffer() async throws {
        let bed = NodeTestBed()
        defer { Task { await bed.shutdown() } }
        let alice = try await bed.start(name: "alice")
        let udp = try #require((alice.node.transport as? SocketTransport)?.datagramSocket)
        let granted = try await udp.getOption(ChannelOptions.socketOption(.so_rcvbuf)).get()
        let limit = try #require(Int(String(contentsOfFile: "/proc/sys/net/core/rmem_max", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)))
        let expected = 2 * min(Int(NodeListeners.datagramReceiveBuffer), limit)
        print("UDP receive buffer: \(granted) bytes (net.core.rmem_max \(limit))")
        #expect(Int(granted) == expected)
        await bed.shutdown()
    }
}
