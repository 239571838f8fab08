#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MeshLocalAPI
import NIOCore
import Testing
@testable import MeshDaemon

/// The deadlines on a real socket (short ones, so the test is quick): a connection that sends
/// nothing and one that leaves a frame half-sent get `timed-out` and are closed; a connection
/// that made a request and then stays idle for longer than both deadlines is not.
@Suite("local API deadlines on a real socket")
struct LocalAPIDeadlineSocketTests {
    @Test func idleAndHalfSentConnectionsAreClosedAndAnIdleAttachedOneIsNot() async throws {
        var limits = LocalAPIServer.Limits()
        limits.firstRequestTimeout = 0.5
        limits.partialFrameTimeout = 0.5
        try await withTestServer(limits: limits) { test in
            // Made a request, then idle: must outlive both deadlines below.
            let working = try RawSocket(path: test.socketPath)
            working.send(.request(.hello, id: 1))
            #expect(try await working.readFrame()?.kind == .reply)

            let start = ContinuousClock.now
            let silent = try RawSocket(path: test.socketPath)
            let silentAnswer = try await silent.readFrame()
            let silentClosed = ContinuousClock.now - start
            #expect(silentAnswer?.errorBody?.code == "timed-out")
            #expect(silentAnswer?.errorBody?.message == "no request arrived within 0.5 s of connecting; send a request right after connecting")
            #expect(try await silent.closesSoon())

            // A whole request, then a header promising 100 body bytes and only 10 of them.
            let halfSent = try RawSocket(path: test.socketPath)
            halfSent.send(.request(.hello, id: 1))
            #expect(try await halfSent.readFrame()?.kind == .reply)
            var header = ByteBuffer()
            LocalAPIFrameEncoder.write(LocalAPIFrame(kind: .request, operation: .status, requestID: 2,
                                                     body: ByteBuffer(repeating: 0x20, count: 100)), to: &header)
            let partialStart = ContinuousClock.now
            halfSent.send(Array(header.readableBytesView.prefix(26)))
            let halfAnswer = try await halfSent.readFrame()
            let halfClosed = ContinuousClock.now - partialStart
            #expect(halfAnswer?.errorBody?.code == "timed-out")
            #expect(halfAnswer?.errorBody?.message == "a frame was left half-sent for 0.5 s; send each frame whole")
            #expect(try await halfSent.closesSoon())

            let idleFor = ContinuousClock.now - start
            working.send(.request(.status, id: 2))
            #expect(try await working.readFrame()?.kind == .reply, "idle for \(idleFor) after its request and still served")
            #expect(test.server.counters.value(.connectionsTimedOut) == 2)
            print("deadline 0.5 s: silent connection closed after \(silentClosed), half-sent frame after \(halfClosed); the connection that made a request was idle \(idleFor) and still answered")
            #expect(silentClosed >= .milliseconds(450) && halfClosed >= .milliseconds(450), "not before the deadline")
        }
    }
}
