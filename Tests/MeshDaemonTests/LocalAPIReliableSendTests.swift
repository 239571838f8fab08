import Foundation
import MeshLocalAPI
import NIOCore
import SessionMesh
import Testing
@testable import MeshDaemon

extension DeliveryIntegration {
    /// Reliable sends through the socket, which the daemon starts on its loop without a task
    /// (the replies of one commit come together): every reply comes, even to a client that
    /// half-closes at once, and the peer's app gets the items in the order they were sent, also
    /// when requests that do run as tasks are mixed in.
    @Suite("Local API reliable sends", .serialized)
    struct LocalAPIReliableSendTests {
        typealias Data = LocalAPIDataTests

        /// The wire bytes of reliable `send` requests `ids`, texts "r <id>" in sequence `id`.
        static func reliableSends(_ ids: ClosedRange<UInt32>) throws -> [UInt8] {
            var wire: [UInt8] = []
            for id in ids {
                let (_, encoded) = try RouterFixtures.envelope("r \(id)", sequence: UInt64(id))
                var frame = ByteBuffer()
                LocalAPIFrameEncoder.write(Data.binary(0x0101, id: id, [2, 0] + encoded), to: &frame)
                wire += Array(frame.readableBytesView)
            }
            return wire
        }

        /// Two paired daemons, a local API server on the first and an app of feature "demo"
        /// attached to the second; all stopped after `body`.
        static func withPairedServer(_ body: (RunningDaemon, LocalAPIServer, CollectingSink) async throws -> Void) async throws {
            let bed = DeliveryTestBed()
            defer { Task { await bed.shutdown() } }
            let (a, b) = try await bed.pair()
            let server = try await Data.startServer(a, bed: bed)
            let servers = ServerCleanup([server])
            defer { Task { await servers.shutdown() } }
            let sinkB = CollectingSink()
            _ = await b.router.attach(features: ["demo"], sink: sinkB)
            try await body(a, server, sinkB)
            // Awaited here too: the deferred tasks may not run when the test process ends next.
            await servers.shutdown()
            await bed.shutdown()
        }

        static func texts(_ sink: CollectingSink) -> [String] { sink.envelopes.map { RouterFixtures.text($0.envelope) } }

        @Test func aClientThatHalfClosesAfterReliableSendsGetsEveryReplyAndThePeerEveryItemInOrder() async throws {
            try await Self.withPairedServer { a, server, sinkB in
                let count: UInt32 = 300
                let app = try RawSocket(path: server.socketPath, receiveTimeout: 10)
                // All at once: more than a connection runs at a time (32), so most wait in its queue.
                app.send(try Self.reliableSends(1...count))
                app.shutdownWrite()
                var replied: [UInt32] = []
                while let frame = try await app.readFrame() {
                    #expect(frame.kind == .reply, "request \(frame.requestID): \(frame.errorBody?.description ?? "")")
                    let reply = try JSONDecoder().decode(MeshSendReply.self, from: Foundation.Data(frame.body.readableBytesView))
                    #expect(reply.outcome == .queued && reply.peers == 1)
                    replied.append(frame.requestID)
                }
                #expect(replied.count == Int(count) && Set(replied) == Set(1...count), "\(replied.count) of \(count) replies before the close")
                #expect(try await app.closesSoon(), "the daemon kept the half-closed connection open")
                try await waitUntil("bob's app got all \(count)", timeout: 20) { sinkB.envelopes.count >= Int(count) }
                #expect(Self.texts(sinkB) == (1...count).map { "r \($0)" }, "bob's app got them out of order or twice")
                let counters = await a.router.counterValues()
                #expect(counters["delivery.reliable.enqueued"] == UInt64(count))
            }
        }

        /// Requests that run as tasks (here `status`) between reliable sends: the sends after
        /// one wait for it, so they still reach the outbox in the order they were sent.
        @Test func sendsMixedWithOtherRequestsKeepTheirOrder() async throws {
            try await Self.withPairedServer { _, server, sinkB in
                let app = try RawSocket(path: server.socketPath, receiveTimeout: 10)
                var wire: [UInt8] = []
                var expected = 0
                for block in UInt32(0)..<10 {
                    let first = block * 20 + 1
                    wire += try Self.reliableSends(first...(first + 19))
                    expected += 20
                    var status = ByteBuffer()
                    LocalAPIFrameEncoder.write(.request(.status, id: 10_000 + block, json: "{}"), to: &status)
                    wire += Array(status.readableBytesView)
                }
                app.send(wire)
                var replies = 0
                while replies < expected + 10, let frame = try await app.readFrame() {
                    #expect(frame.kind == .reply, "request \(frame.requestID): \(frame.errorBody?.description ?? "")")
                    replies += 1
                }
                #expect(replies == expected + 10)
                try await waitUntil("bob's app got all \(expected)", timeout: 20) { sinkB.envelopes.count >= expected }
                #expect(Self.texts(sinkB) == (1...UInt32(expected)).map { "r \($0)" }, "bob's app got them out of order or twice")
            }
        }

        /// With no paired device a reliable send queues nothing and says so at once.
        @Test func aSendWithNoPairedDeviceIsAnsweredSentToNoPeers() async throws {
            let (socketPath, cleanUp) = try await Data.singleServer("alone")
            defer { Task { await cleanUp() } }
            let app = try RawSocket(path: socketPath)
            app.send(try Self.reliableSends(1...3))
            for id in UInt32(1)...3 {
                let frame = try await Data.answer(to: id, on: app)
                let reply = try JSONDecoder().decode(MeshSendReply.self, from: Foundation.Data(frame.body.readableBytesView))
                #expect(reply.outcome == .sent && reply.peers == 0)
            }
            await cleanUp()
        }
    }
}
