import MeshLocalAPI
import NIOCore
import NIOEmbedded
import Testing

/// `LocalAPIFrameWriter`: the frames of one flush leave as one buffer, in order, byte for byte
/// what `LocalAPIFrameEncoder` writes; promises complete with the write that carried them; a big
/// burst goes out before the flush; what is not flushed when the channel closes fails.
@Suite("Local API frame writer")
struct LocalAPIFrameWriterTests {
    private func channel() throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(LocalAPIFrameWriter())
        return channel
    }

    private func frame(_ id: UInt32, bodyBytes: Int = 16) -> LocalAPIFrame {
        LocalAPIFrame(kind: .reply, operation: .send, requestID: id,
                      body: ByteBuffer(bytes: (0..<bodyBytes).map { UInt8(truncatingIfNeeded: $0 &+ Int(id)) }))
    }

    private func frames(in buffer: ByteBuffer) throws -> [LocalAPIFrame] {
        var buffer = buffer, frames: [LocalAPIFrame] = []
        while let frame = try LocalAPIFrameDecoder.parse(&buffer) { frames.append(frame) }
        #expect(buffer.readableBytes == 0, "bytes left after the last whole frame")
        return frames
    }

    @Test func framesOfOneFlushShareOneBufferInOrder() throws {
        let channel = try channel()
        defer { _ = try? channel.finish() }
        for id in 1...5 { channel.write(frame(UInt32(id)), promise: nil) }
        #expect(try channel.readOutbound(as: ByteBuffer.self) == nil, "nothing may leave before the flush")
        channel.flush()
        let buffer = try #require(try channel.readOutbound(as: ByteBuffer.self))
        #expect(try channel.readOutbound(as: ByteBuffer.self) == nil, "one buffer per flush")
        var expected = ByteBuffer()
        for id in 1...5 { LocalAPIFrameEncoder.write(frame(UInt32(id)), to: &expected) }
        #expect(buffer == expected)
        #expect(try frames(in: buffer).map(\.requestID) == [1, 2, 3, 4, 5])
    }

    @Test func everyPromiseCompletesWithTheFlush() throws {
        let channel = try channel()
        defer { _ = try? channel.finish() }
        let promises = (0..<3).map { _ in channel.eventLoop.makePromise(of: Void.self) }
        let done = Count()
        for (index, promise) in promises.enumerated() {
            promise.futureResult.whenSuccess { done.value += 1 }
            channel.write(frame(UInt32(index)), promise: promise)
        }
        channel.write(frame(9), promise: nil)
        channel.embeddedEventLoop.run()
        #expect(done.value == 0)
        channel.flush()
        channel.embeddedEventLoop.run()
        #expect(done.value == 3)
        #expect(try frames(in: try #require(try channel.readOutbound(as: ByteBuffer.self))).count == 4)
    }

    @Test func aLargeBurstIsHandedOnBeforeTheFlush() throws {
        let channel = try channel()
        defer { _ = try? channel.finish() }
        let bodyBytes = 1_000
        let count = LocalAPIFrameWriter.eagerWriteBytes / bodyBytes + 2
        for id in 0..<count { channel.write(frame(UInt32(id), bodyBytes: bodyBytes), promise: nil) }
        // EmbeddedChannel only shows flushed bytes: the eager buffer is in its pending writes,
        // so flushing now must produce two buffers (the eager one and the rest), all in order.
        channel.flush()
        var ids: [UInt32] = [], buffers = 0
        while let buffer = try channel.readOutbound(as: ByteBuffer.self) {
            buffers += 1
            ids += try frames(in: buffer).map(\.requestID)
        }
        #expect(buffers == 2)
        #expect(ids == (0..<UInt32(count)).map { $0 })
    }

    @Test func framesNotFlushedWhenTheChannelClosesFail() throws {
        let channel = try channel()
        let promise = channel.eventLoop.makePromise(of: Void.self)
        channel.write(frame(1), promise: promise)
        _ = try? channel.close().wait()
        channel.embeddedEventLoop.run()
        #expect(throws: ChannelError.self) { try promise.futureResult.wait() }
        #expect(try channel.readOutbound(as: ByteBuffer.self) == nil)
    }
}

/// A counter bumped by future callbacks, which all run on the embedded channel's one thread.
private final class Count: @unchecked Sendable {
    var value = 0
}
