import Foundation
import MeshLocalAPI
import NIOCore
import SessionMesh
@testable import SessionMeshClient
import Testing

/// Attach streams that end while the connection lives leave the connection's handler.
@Suite("MeshClient attach streams")
struct MeshClientAttachStreamTests {
    /// Answers like `StandardResponder`, except that an attach by the app "hang" gets no reply.
    static func daemon() async throws -> FakeDaemon {
        try await FakeDaemon.start { request in
            if request.operation == .attach,
               let attach = try? LocalAPIJSON.decode(MeshAttachRequest.self, from: request.body, operation: .attach),
               attach.app == "hang" {
                return []
            }
            return StandardResponder()(request)
        }
    }

    @Test func cancelledAttachesAndStoppedReadersLeaveNoStreamRegistered() async throws {
        let daemon = try await Self.daemon()
        defer { Task { await daemon.stop() } }
        let client = try await MeshClient.connect(socketPath: daemon.socketPath)
        let live = try await client.attach(features: ["demo"], app: "live")
        #expect(try await client.registeredEventStreams() == 1)

        // An app attaching and giving up again and again (half of them before the request left).
        for round in 1...40 {
            let attach = Task { try await client.attach(features: ["demo"], app: "hang") }
            if round.isMultiple(of: 2) {
                let written = daemon.requests.count + 1
                _ = await eventually { daemon.requests.count >= written }
            }
            attach.cancel()
            await #expect(throws: (any Error).self) { try await attach.value }
        }
        // A reader that stops reading its attachment's events.
        let stopped = try await client.attach(features: ["demo"], app: "reader")
        let reader = Task { for await _ in stopped.events {} }
        #expect(try await client.registeredEventStreams() == 2)
        reader.cancel()
        await reader.value

        #expect(await eventually { (try? await client.registeredEventStreams()) == 1 })
        print("attach streams registered after 40 cancelled attaches and a stopped reader: \(try await client.registeredEventStreams())")

        // The live attachment still gets its events.
        let event = LocalAPIDataEvent.reachability(MeshReachabilityEvent(peer: "PEERDEV-7654321", featureID: "demo",
                                                                             reachable: true, reason: .appAttached))
        let liveID = try #require(daemon.requests.first { $0.operation == .attach }?.requestID)
        daemon.push(try event.frame(requestID: liveID))
        var iterator = live.events.makeAsyncIterator()
        #expect(await iterator.next() != nil)
        await client.close()
        #expect(await iterator.next() == nil)
    }
}
