import Foundation
import MeshLocalAPI
import NIOCore
import NIOPosix
import SessionMesh
import Testing
@testable import MeshDaemon

extension DeliveryIntegration {
    /// Realtime sends through a real local API socket: the requests an app writes at once leave
    /// packed into few datagrams, and a lone request leaves as one datagram of its own, before
    /// its reply — each item arriving once, in order, and each request answered `sent`.
    @Suite("Local API realtime bursts", .serialized)
    struct LocalAPIRealtimeBurstTests {
        static func sendFrame(_ text: String, sequence: UInt64, id: UInt32) throws -> LocalAPIFrame {
            let (envelope, _) = try RouterFixtures.envelope(text, sequence: sequence)
            return LocalAPIFrame(kind: .request, operation: .send, flags: .binaryBody, requestID: id,
                                 body: try MeshSendRequest(mode: .realtimeBestEffort, envelope: envelope).encode())
        }

        static func outcome(_ frame: LocalAPIFrame) -> String? {
            guard frame.kind == .reply else { return nil }
            return MeshSendReply(compactBody: frame.body)?.outcome.rawValue
        }

        @Test func aBurstIsPackedAndALoneSendIsOneDatagram() async throws {
            let bed = DeliveryTestBed()
            defer { Task { await bed.shutdown() } }
            let (a, _, _, sinkB) = try await bed.pairWithApps()
            let server = try await LocalAPIDataTests.startServer(a, bed: bed)
            let servers = ServerCleanup([server])
            defer { Task { await servers.shutdown() } }
            let app = try RawSocket(path: server.socketPath)

            let count = 30
            var wire = ByteBuffer()
            for index in 1...count {
                LocalAPIFrameEncoder.write(try Self.sendFrame("b\(index)", sequence: UInt64(index), id: UInt32(index)), to: &wire)
            }
            #expect(app.send(Array(wire.readableBytesView)) == wire.readableBytes)
            let replies = try await app.readFrames(count)
            #expect(replies.map(\.requestID) == (1...count).map { UInt32($0) })
            #expect(replies.allSatisfy { Self.outcome($0) == "sent" })
            try await waitUntil("\(count) realtime items", timeout: 5) { sinkB.envelopes.count >= count }
            let burst = try await bed.realtimeSettled(a, count: count)
            let datagrams = burst["delivery.realtime.datagrams"] ?? 0
            print("local API burst of \(count): \(datagrams) datagrams, \(burst["delivery.realtime.batches"] ?? 0) batches")
            #expect(datagrams >= 1 && datagrams < UInt64(count), "a burst written at once is packed")
            #expect((burst["delivery.realtime.batches"] ?? 0) >= 1)

            app.send(try Self.sendFrame("lone", sequence: UInt64(count + 1), id: 1_000))
            let reply = try #require(try await app.readFrame())
            #expect(reply.requestID == 1_000 && Self.outcome(reply) == "sent")
            try await waitUntil("the lone item", timeout: 5) { sinkB.envelopes.count >= count + 1 }
            let after = try await bed.realtimeSettled(a, count: count + 1)
            #expect(after["delivery.realtime.datagrams"] == datagrams + 1, "a lone send is one datagram")
            #expect(after["delivery.realtime.batches"] == burst["delivery.realtime.batches"])
            #expect(sinkB.envelopes.map { RouterFixtures.text($0.envelope) } == (1...count).map { "b\($0)" } + ["lone"])
            #expect(sinkB.envelopes.allSatisfy { $0.mode == 1 && $0.inboxID == 0 })
        }
    }
}
