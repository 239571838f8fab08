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

    /// The requests of one write go out through the channel as one buffer, each framed with its
    /// own request id, in order.
    @Test func theRequestsOfOneWriteGoOutAsOneBufferInOrder() async throws {
        let handler = LocalAPIClientHandler(socketPath: "/nonexistent/meshd.sock")
        let channel = EmbeddedChannel(handler: handler)
        defer { _ = try? channel.finish() }
        let texts = ["one", "two", "three"]
        channel.writeAndFlush(texts.map {
            LocalAPIClientRequest(operation: .status, flags: [], body: ByteBuffer(string: $0),
                                  sink: .single(LocalAPIReplySlot<LocalAPIFrame>()))
        }, promise: nil)
        var wire = try #require(try channel.readOutbound(as: ByteBuffer.self))
        #expect(try channel.readOutbound(as: ByteBuffer.self) == nil, "one buffer for the whole write")
        var seen: [(UInt32, String)] = []
        while let frame = try LocalAPIFrameDecoder.parse(&wire) {
            seen.append((frame.requestID, String(buffer: frame.body)))
        }
        #expect(seen.map(\.1) == texts)
        #expect(Set(seen.map(\.0)).count == texts.count, "each request its own id")
        #expect(wire.readableBytes == 0)
    }

    /// Counts the reads the channel is asked for (sits before the client handler).
    final class ReadCounter: ChannelOutboundHandler {
        typealias OutboundIn = ByteBuffer
        var reads = 0

        func read(context: ChannelHandlerContext) {
            reads += 1
            context.read()
        }
    }

    /// A full stream holds reading back until the app made room; a request awaiting its reply
    /// lets reading go on (the reserve) and its reply is answered ahead of the waiting events,
    /// which then follow in order.
    @Test func aFullStreamHoldsReadsBackUntilDrainedWhileAnAwaitedReplyGoesAhead() async throws {
        let counter = ReadCounter()
        let handler = LocalAPIClientHandler(socketPath: "/nonexistent/meshd.sock")
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(counter)
        try channel.pipeline.syncOperations.addHandler(handler)
        let stream = LocalAPIEventStream(capacity: 2, lowWatermark: 1)
        let roomCalls = Locked(0)
        stream.setCallbacks(onRoom: { roomCalls.withLock { $0 += 1 } }, onTermination: {})
        let events = stream.makeStream()
        try channel.writeOutbound([LocalAPIClientRequest(operation: .attach, flags: [], body: ByteBuffer(),
                                                        sink: .single(LocalAPIReplySlot()), events: stream)])
        let attachFrame = try #require(try channel.readOutbound(as: ByteBuffer.self))
        let attachID = try #require(Self.requestID(attachFrame))
        try channel.writeInbound(LocalAPIFrame(kind: .reply, operation: .attach, requestID: attachID, body: ByteBuffer()))

        func reachability(_ peer: String) throws -> LocalAPIFrame {
            try LocalAPIDataEvent.reachability(MeshReachabilityEvent(peer: peer, featureID: "demo", reachable: true,
                                                                     reason: .appAttached)).frame(requestID: attachID)
        }
        for peer in ["PEER-1", "PEER-2", "PEER-3"] { try channel.writeInbound(try reachability(peer)) }
        channel.pipeline.fireChannelReadComplete()
        #expect(stream.count == 2)
        #expect(handler.queuedFrames == 1)
        channel.read()
        #expect(counter.reads == 0, "read while the stream is full")

        // A request: its reply may be behind the waiting event, so reading goes on.
        let slot = LocalAPIReplySlot<LocalAPIFrame>()
        try channel.writeOutbound([LocalAPIClientRequest(operation: .inboxAck, flags: [], body: ByteBuffer(), sink: .single(slot))])
        let ackFrame = try #require(try channel.readOutbound(as: ByteBuffer.self))
        let ackID = try #require(Self.requestID(ackFrame))
        #expect(counter.reads == 1)
        try channel.writeInbound(LocalAPIFrame(kind: .reply, operation: .inboxAck, requestID: ackID, body: ByteBuffer()))
        #expect(try await slot.wait().requestID == ackID)
        channel.read()
        #expect(counter.reads == 1, "read with nothing awaited while the stream is full")

        // The app takes one event: down to the low watermark, the handler is told there is room.
        var iterator = events.makeAsyncIterator()
        var peers: [String] = []
        if case .reachability(let change) = await iterator.next() { peers.append(change.peer) }
        #expect(roomCalls.withLock { $0 } == 1)
        handler.resumeDelivery()
        #expect(handler.queuedFrames == 0)
        #expect(counter.reads == 2, "the held read goes out once everything was handed over")
        for _ in 0..<2 { if case .reachability(let change) = await iterator.next() { peers.append(change.peer) } }
        #expect(peers == ["PEER-1", "PEER-2", "PEER-3"])
        _ = try? channel.finish()
    }
}
