import Foundation
import MeshDaemon
import MeshLocalAPI
import NIOCore
import SessionMeshClient
import Testing

/// What one client does must not disturb another.
@Suite("Local API client isolation")
struct LocalAPIIsolationTests {
    @Test(arguments: [
        ("bad magic", Array("GET / HTTP/1.1\r\n\r\n".utf8), "bad-magic"),
        ("bad version", [0x53, 0x4D, 9, 1, 0, 2, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0], "unsupported-version"),
        ("oversized", [0x53, 0x4D, 1, 1, 0, 2, 0, 0, 0, 0, 0, 1, 0x7F, 0xFF, 0xFF, 0xFF], "frame-too-large"),
        ("garbage JSON", [0x53, 0x4D, 1, 1, 0, 2, 0, 0, 0, 0, 0, 1, 0, 0, 0, 3, 0x7B, 0x7B, 0x7B], "bad-request"),
        ("bad flags", [0x53, 0x4D, 1, 1, 0, 2, 0x40, 0, 0, 0, 0, 1, 0, 0, 0, 0], "bad-frame"),
    ] as [(String, [UInt8], String)])
    func malformedFramesCloseOnlyThatClient(label: String, bytes: [UInt8], code: String) async throws {
        try await withTestServer { test in
            let good = try await MeshClient.connect(socketPath: test.socketPath)
            #expect(try await good.status().name == "fake")

            let bad = try RawSocket(path: test.socketPath)
            bad.send(bytes)
            let reply = try #require(try await bad.readFrame(), "\(label): no error frame")
            #expect(reply.errorBody?.code == code, "\(label)")
            #expect(try await bad.closesSoon(), "\(label): connection not closed")

            #expect(try await good.status().name == "fake")
            #expect(try await good.peers().count == 1)
            #expect(test.server.counters.value(.malformedInput) == 1)
            await good.close()
        }
    }

    @Test func aClientThatHalfClosesGetsItsRepliesAndATruncatedFrameIsReported() async throws {
        try await withTestServer { test in

            let polite = try RawSocket(path: test.socketPath)
            polite.send(.request(.status, id: 1))
            polite.send(.request(.peers, id: 2))
            polite.shutdownWrite()
            let first = try #require(try await polite.readFrame())
            let second = try #require(try await polite.readFrame())
            #expect(Set([first.requestID, second.requestID]) == [1, 2])
            #expect(first.kind == .reply && second.kind == .reply)
            #expect(try await polite.closesSoon())

            let truncated = try RawSocket(path: test.socketPath)
            truncated.send([0x53, 0x4D, 1, 1, 0, 2, 0, 0, 0, 0, 0, 3, 0, 0, 0, 10, 0x7B])
            truncated.shutdownWrite()
            let error = try #require(try await truncated.readFrame())
            #expect(error.errorBody?.code == "bad-frame")
            #expect(error.errorBody?.message == "the connection ended inside a frame (17 bytes buffered)")
            #expect(try await truncated.closesSoon())
        }
    }

    @Test func aClientThatPipelinesManyRequestsWhileReadingGetsEveryReply() async throws {
        // One read delivers at most 64 KiB = 4096 empty requests, so a queue limit just above
        // that must never trip, however many requests are pipelined.
        var limits = LocalAPIServer.Limits()
        limits.maximumQueued = 4200
        try await withTestServer(limits: limits) { test in
            let count = 8_000
            let pipeliner = try RawSocket(path: test.socketPath)
            var wire = ByteBuffer()
            for id in 1...count { LocalAPIFrameEncoder.write(.request(.peers, id: UInt32(id)), to: &wire) }
            let bytes = Array(wire.readableBytesView)
            let sending = Task { try await blocking { pipeliner.send(bytes) } }
            let replies = try await pipeliner.readFrames(count)
            let seen = Set(replies.filter { $0.kind == .reply }.map(\.requestID))
            #expect(try await sending.value == bytes.count)
            #expect(seen.count == count)
            #expect(test.server.counters.value(.slowReaderCloses) == 0)
        }
    }

    @Test func aClientThatNeverReadsDoesNotSlowOthers() async throws {
        var limits = LocalAPIServer.Limits()
        limits.writeBufferLowWatermark = 8 * 1024
        limits.writeBufferHighWatermark = 32 * 1024
        try await withTestServer(limits: limits) { test in

            // Pipeline 20 000 status requests (~8 MB of replies) and never read one.
            let flooder = try RawSocket(path: test.socketPath)
            flooder.setNonBlocking()
            var wire = ByteBuffer()
            for id in 1...20_000 { LocalAPIFrameEncoder.write(.request(.status, id: UInt32(id)), to: &wire) }
            let sent = flooder.send(Array(wire.readableBytesView))
            #expect(sent > 0)
            try await pollUntil { test.server.counters.value(.slowReaderPauses) >= 1 }

            // Another client is served promptly all the while.
            let client = try await MeshClient.connect(socketPath: test.socketPath)
            let clock = ContinuousClock()
            let elapsed = try await clock.measure {
                for _ in 0..<20 { _ = try await client.status() }
            }
            print("slow-reader test: 20 status calls while flooded took \(elapsed), sent \(sent) bytes, pauses \(test.server.counters.value(.slowReaderPauses))")
            // Blocked would mean never; the bound is loose because other tests share the 2 cores.
            #expect(elapsed < .seconds(10), "20 status calls took \(elapsed)")
            #expect(test.server.connectionCount == 2)
            await client.close()
        }
    }
}
