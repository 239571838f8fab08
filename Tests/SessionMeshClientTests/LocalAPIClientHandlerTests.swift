import MeshLocalAPI
import NIOCore
import NIOEmbedded
@testable import SessionMeshClient
import Testing

/// The client handler's request ids after the 32-bit counter wrapped.
@Suite("Local API client handler")
struct LocalAPIClientHandlerTests {
    /// The request id of the first frame `buffer` holds (bytes 8–11 of the header).
    static func requestID(_ buffer: ByteBuffer) -> UInt32? {
        buffer.getInteger(at: buffer.readerIndex + 8, as: UInt32.self)
    }

    @Test func aWrappedCounterSkipsTheIdOfALiveAttachSoItsEventsKeepFlowing() async throws {
        let handler = LocalAPIClientHandler(socketPath: "/nonexistent/meshd.sock")
        let channel = EmbeddedChannel(handler: handler)
        let stream = LocalAPIEventStream(.default)
        let events = stream.makeStream()
        let attachSlot = LocalAPIReplySlot<LocalAPIFrame>()
        try channel.writeOutbound([LocalAPIClientRequest(operation: .attach, flags: [], body: ByteBuffer(),
                                                        sink: .single(attachSlot), events: stream)])
        let attachFrame = try #require(try channel.readOutbound(as: ByteBuffer.self))
        let attachID = try #require(Self.requestID(attachFrame))
        try channel.writeInbound(LocalAPIFrame(kind: .reply, operation: .attach, requestID: attachID, body: ByteBuffer()))

        // 2^32 - 1 requests later the counter is back at the attach's id.
        handler.nextID = attachID
        let sendSlot = LocalAPIReplySlot<LocalAPIFrame>()
        try channel.writeOutbound([LocalAPIClientRequest(operation: .send, flags: [], body: ByteBuffer(),
                                                        sink: .single(sendSlot))])
        let sendFrame = try #require(try channel.readOutbound(as: ByteBuffer.self))
        let sendID = try #require(Self.requestID(sendFrame))
        #expect(sendID != attachID)

        // The daemon refuses the send; the attach's stream must live on and get its next event.
        try channel.writeInbound(LocalAPIFrame(kind: .error, operation: .send, requestID: sendID,
                                               body: ByteBuffer(string: #"{"code":"queue-full","message":"full"}"#)))
        try channel.writeInbound(LocalAPIFrame(kind: .event, operation: .attach, requestID: attachID, body: ByteBuffer()))
        channel.pipeline.fireChannelReadComplete()
        stream.finish()
        var received = 0
        for await _ in events { received += 1 }
        #expect(received == 1)
        let sendReply = try await sendSlot.wait()
        #expect(sendReply.kind == .error)
        _ = try? channel.finish()
    }
}
