import MeshLocalAPI
import NIOCore
import NIOEmbedded
import Testing

/// `LocalAPIFrameWriter` with a direct output: a flush whose frames carry no promise goes to the
/// socket without the channel; what the socket does not take goes to the channel, and later
/// buffers follow it there until the channel has written it — the bytes a reader sees are the
/// frames in call order, whole, whatever the socket takes at each call.
@Suite("Local API frame writer, direct output")
struct LocalAPIFrameWriterDirectTests {
    /// A socket that takes at most `room` bytes per call (`nil`: all; -1: refuses, as a closed
    /// one), recording what it took in `wire`.
    final class FakeSocket: LocalAPIDirectOutput {
        var room: Int?
        var wire: [UInt8] = []
        var calls = 0
        init(room: Int? = nil) { self.room = room }
        func write(_ bytes: UnsafeRawBufferPointer) -> Int {
            calls += 1
            if room == -1 { return -1 }
            let taken = min(bytes.count, room ?? bytes.count)
            wire += bytes.prefix(taken)
            return taken
        }
    }

    private func channel(_ socket: FakeSocket) throws -> (EmbeddedChannel, LocalAPIFrameWriter) {
        let channel = EmbeddedChannel()
        let writer = LocalAPIFrameWriter()
        writer.directOutput = socket
        try channel.pipeline.syncOperations.addHandler(writer)
        return (channel, writer)
    }

    private func frame(_ id: UInt32, bodyBytes: Int = 40) -> LocalAPIFrame {
        LocalAPIFrame(kind: .event, operation: .send, requestID: id,
                      body: ByteBuffer(bytes: (0..<bodyBytes).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ Int(id)) }))
    }

    private func encoded(_ frames: [LocalAPIFrame]) -> [UInt8] {
        var buffer = ByteBuffer()
        for frame in frames { LocalAPIFrameEncoder.write(frame, to: &buffer) }
        return Array(buffer.readableBytesView)
    }

    /// Moves what the channel wrote onto the fake wire, after what the socket took directly
    /// (the embedded channel writes at its flush, synchronously).
    private func drain(_ channel: EmbeddedChannel, into socket: FakeSocket) throws {
        while let buffer = try channel.readOutbound(as: ByteBuffer.self) { socket.wire += buffer.readableBytesView }
    }

    @Test func aFlushTheSocketTakesWhollyNeverReachesTheChannel() throws {
        let socket = FakeSocket()
        let (channel, _) = try channel(socket)
        defer { _ = try? channel.finish() }
        let frames = (1...4).map { frame(UInt32($0)) }
        for each in frames { channel.write(each, promise: nil) }
        #expect(socket.calls == 0, "nothing may leave before the flush")
        channel.flush()
        #expect(socket.calls == 1, "one write for the flush")
        #expect(try channel.readOutbound(as: ByteBuffer.self) == nil)
        #expect(socket.wire == encoded(frames))
    }

    /// Random socket room per call, seeded: the reader always sees every frame, whole and in order.
    @Test func partialWritesKeepTheOrderOfTheFrames() throws {
        let seed = SeededGenerator.seed(for: "partialWritesKeepTheOrderOfTheFrames")
        var random = SeededGenerator(seed: seed)
        let socket = FakeSocket()
        let (channel, _) = try channel(socket)
        defer { _ = try? channel.finish() }
        var sent: [LocalAPIFrame] = []
        for round in 0..<200 {
            for index in 0..<Int.random(in: 1...5, using: &random) {
                let each = frame(UInt32(round * 10 + index), bodyBytes: Int.random(in: 0...300, using: &random))
                sent.append(each)
                channel.write(each, promise: nil)
            }
            socket.room = [nil, 0, -1, Int.random(in: 1...200, using: &random)][Int.random(in: 0...3, using: &random)]
            channel.flush()
            try drain(channel, into: socket)
        }
        #expect(socket.wire == encoded(sent), "seed \(seed)")
    }

    @Test func aBufferLeftInTheChannelHoldsBackLaterDirectWrites() throws {
        let socket = FakeSocket(room: 10)
        let channel = EmbeddedChannel()
        defer { _ = try? channel.finish() }
        let holding = HoldingHandler()
        let writer = LocalAPIFrameWriter()
        writer.directOutput = socket
        try channel.pipeline.syncOperations.addHandler(holding)
        try channel.pipeline.syncOperations.addHandler(writer)
        let first = frame(1), second = frame(2), third = frame(3)
        channel.write(first, promise: nil)
        channel.flush()
        #expect(socket.calls == 1 && socket.wire.count == 10, "the socket takes 10 bytes, the channel the rest")
        #expect(holding.buffers.count == 1)
        // The channel has not written its part yet: the next frame must queue behind it.
        socket.room = nil
        channel.write(second, promise: nil)
        channel.flush()
        #expect(socket.calls == 1, "no direct write while the channel holds earlier bytes")
        #expect(holding.buffers.count == 2)
        holding.release(onto: socket)
        // Everything the channel held is written: direct again.
        channel.write(third, promise: nil)
        channel.flush()
        #expect(socket.calls == 2)
        #expect(socket.wire == encoded([first, second, third]))
    }

    /// Holds the writer's buffers and their promises, as a channel whose socket is full does.
    final class HoldingHandler: ChannelOutboundHandler {
        typealias OutboundIn = ByteBuffer
        var buffers: [(ByteBuffer, EventLoopPromise<Void>?)] = []
        func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
            buffers.append((unwrapOutboundIn(data), promise))
        }
        func flush(context: ChannelHandlerContext) {}
        /// "Writes" what it holds onto `socket`'s wire, in order, and completes the promises.
        func release(onto socket: FakeSocket) {
            let held = buffers
            buffers = []
            for (buffer, promise) in held {
                socket.wire += buffer.readableBytesView
                promise?.succeed(())
            }
        }
    }

    @Test func framesWithAPromiseGoThroughTheChannelAndTheirPromiseCompletes() throws {
        let socket = FakeSocket()
        let (channel, _) = try channel(socket)
        defer { _ = try? channel.finish() }
        let promise = channel.eventLoop.makePromise(of: Void.self)
        let written = Flag()
        promise.futureResult.whenSuccess { written.value = true }
        channel.write(frame(1), promise: promise)
        channel.flush()
        channel.embeddedEventLoop.run()
        #expect(socket.calls == 0)
        #expect(written.value)
        try drain(channel, into: socket)
        #expect(socket.wire == encoded([frame(1)]))
    }

    @Test func aFrameBuiltInPlaceIsByteForByteTheEncodedFrame() throws {
        let socket = FakeSocket()
        let (channel, writer) = try channel(socket)
        defer { _ = try? channel.finish() }
        let context = try channel.pipeline.syncOperations.context(handler: writer)
        let body: [UInt8] = Array(0..<77)
        writer.appendFrame(kind: .event, operation: .envelopeEvent, flags: .binaryBody, requestID: 42,
                           bodyLength: body.count, context: context) { $0.writeBytes(body) }
        channel.flush()
        let expected = LocalAPIFrame(kind: .event, operation: .envelopeEvent, flags: .binaryBody, requestID: 42,
                                     body: ByteBuffer(bytes: body))
        #expect(socket.wire == encoded([expected]))
    }
}

/// A flag set by future callbacks, which run on the embedded channel's one thread.
private final class Flag: @unchecked Sendable {
    var value = false
}
