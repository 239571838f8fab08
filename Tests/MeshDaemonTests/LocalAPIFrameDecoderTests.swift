import MeshLocalAPI
import NIOCore
import NIOEmbedded
import Testing

@Suite("Local API framing")
struct LocalAPIFrameDecoderTests {
    private func channel(maximumBodyLength: Int = LocalAPIWireFormat.defaultMaximumBodyLength) throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(LocalAPIFrameDecoder(maximumBodyLength: maximumBodyLength)))
        return channel
    }

    private func header(magic: UInt16 = 0x534D, version: UInt8 = 1, kind: UInt8 = 1, operation: UInt16 = 2,
                        flags: UInt16 = 0, requestID: UInt32 = 7, length: UInt32 = 0) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.writeInteger(magic)
        buffer.writeInteger(version)
        buffer.writeInteger(kind)
        buffer.writeInteger(operation)
        buffer.writeInteger(flags)
        buffer.writeInteger(requestID)
        buffer.writeInteger(length)
        return buffer
    }

    @Test func encodedFramesDecodeEvenWhenSplitByteByByte() throws {
        let channel = try channel()
        let frames = [
            LocalAPIFrame(kind: .request, operation: .status, requestID: 1, body: ByteBuffer()),
            LocalAPIFrame(kind: .reply, operation: .pairCreate, requestID: 0xFFFF_FFFF, body: ByteBuffer(string: #"{"code":"x"}"#)),
            LocalAPIFrame(kind: .event, operation: LocalAPIOperation(rawValue: 0x0100), flags: .binaryBody, requestID: 9,
                          body: ByteBuffer(bytes: [0, 1, 2, 255])),
        ]
        var wire = ByteBuffer()
        for frame in frames { LocalAPIFrameEncoder.write(frame, to: &wire) }
        #expect(wire.readableBytes == 16 * 3 + 12 + 4)
        while let byte = wire.readSlice(length: 1) { try channel.writeInbound(byte) }
        for frame in frames {
            #expect(try channel.readInbound(as: LocalAPIFrame.self) == frame)
        }
        #expect(try channel.finish().isClean)
    }

    @Test func theHeaderIsBigEndianAsDocumented() {
        var wire = ByteBuffer()
        LocalAPIFrameEncoder.write(LocalAPIFrame(kind: .request, operation: .pairJoin, requestID: 0x0102_0304,
                                                 body: ByteBuffer(string: "{}")), to: &wire)
        #expect(Array(wire.readableBytesView) == [0x53, 0x4D, 1, 1, 0x00, 0x13, 0, 0, 1, 2, 3, 4, 0, 0, 0, 2, 0x7B, 0x7D])
        // After a frame, with the flags set and a body over 255 bytes: each field at its offset.
        LocalAPIFrameEncoder.write(LocalAPIFrame(kind: .event, operation: LocalAPIOperation(rawValue: 0x0A0B), flags: .binaryBody,
                                                 requestID: 0xFFEE_DDCC, body: ByteBuffer(repeating: 7, count: 0x0102)), to: &wire)
        #expect(Array(wire.readableBytesView.dropFirst(18).prefix(16)) == [0x53, 0x4D, 1, 3, 0x0A, 0x0B, 0, 1, 0xFF, 0xEE, 0xDD, 0xCC, 0, 0, 1, 2])
        #expect(wire.readableBytes == 18 + 16 + 0x0102)
    }

    @Test func aShortHeaderWaitsAndIsAnErrorAtEndOfStream() throws {
        let channel = try channel()
        var partial = header()
        partial.moveWriterIndex(to: 10)
        try channel.writeInbound(partial)
        #expect(try channel.readInbound(as: LocalAPIFrame.self) == nil)
        #expect(throws: LocalAPIFramingError(.truncated(bufferedBytes: 10))) { try channel.finish() }
    }

    @Test func aBadMagicIsCaughtFromTheFirstTwoBytes() throws {
        let channel = try channel()
        #expect(throws: LocalAPIFramingError(.badMagic(0x4745))) {
            try channel.writeInbound(ByteBuffer(string: "GE"))
        }
        _ = try? channel.finish()
    }

    @Test(arguments: [
        (UInt8(2), UInt8(1), UInt16(0), LocalAPIFramingError.Reason.unsupportedVersion(2), "unsupported-version"),
        (UInt8(0), UInt8(1), UInt16(0), .unsupportedVersion(0), "unsupported-version"),
        (UInt8(1), UInt8(0), UInt16(0), .unknownKind(0), "bad-frame"),
        (UInt8(1), UInt8(9), UInt16(0), .unknownKind(9), "bad-frame"),
        (UInt8(1), UInt8(1), UInt16(0x8000), .unknownFlags(0x8000), "bad-frame"),
    ])
    func malformedHeadersAreRejectedWithTheirRequestID(version: UInt8, kind: UInt8, flags: UInt16,
                                                        reason: LocalAPIFramingError.Reason, code: String) throws {
        let channel = try channel()
        #expect(throws: LocalAPIFramingError(reason, requestID: 7)) {
            try channel.writeInbound(header(version: version, kind: kind, flags: flags))
        }
        #expect(LocalAPIFramingError(reason).code == code)
        _ = try? channel.finish()
    }

    @Test func anOversizedLengthIsRejectedBeforeAnyBodyIsBuffered() throws {
        let channel = try channel(maximumBodyLength: 1024)
        #expect(throws: LocalAPIFramingError(.frameTooLarge(length: 1025, maximum: 1024), requestID: 7)) {
            try channel.writeInbound(header(length: 1025))
        }
        #expect(LocalAPIFramingError(.frameTooLarge(length: 1025, maximum: 1024)).description
                    == "frame body of 1025 bytes exceeds the maximum of 1024 bytes")
        _ = try? channel.finish()
    }

    @Test func theLargestAllowedBodyIsAccepted() throws {
        let channel = try channel(maximumBodyLength: 1024)
        var wire = header(length: 1024)
        wire.writeRepeatingByte(0x20, count: 1024)
        try channel.writeInbound(wire)
        #expect(try channel.readInbound(as: LocalAPIFrame.self)?.body.readableBytes == 1024)
        #expect(try channel.finish().isClean)
    }

    @Test func operationNamesCoverTheDocumentedCodes() {
        #expect(LocalAPIOperation.controlOperations.map(\.name)
                    == ["hello", "status", "peers", "pair.create", "pair.wait", "pair.cancel", "pair.join", "unpair", "ping"])
        #expect(LocalAPIOperation(rawValue: 0x0abc).name == "op-0x0ABC")
    }
}

/// The decoder's lookahead: as each frame is passed on, whether a whole frame follows it in the
/// buffer (the daemon sends the last realtime item of a read burst before answering).
@Suite("Local API framing lookahead")
struct LocalAPIFrameLookaheadTests {
    /// Records, for each frame it is handed, what the lookahead said at that moment.
    final class Recorder: ChannelInboundHandler {
        typealias InboundIn = LocalAPIFrame
        let lookahead: LocalAPIFrameLookahead
        var seen: [(UInt32, Bool)] = []
        init(_ lookahead: LocalAPIFrameLookahead) { self.lookahead = lookahead }
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            seen.append((unwrapInboundIn(data).requestID, lookahead.anotherFrameBuffered))
        }
    }

    private func bytes(_ ids: [UInt32], bodyBytes: Int = 5) -> ByteBuffer {
        var buffer = ByteBuffer()
        for id in ids {
            LocalAPIFrameEncoder.write(LocalAPIFrame(kind: .request, operation: .send, requestID: id,
                                                     body: ByteBuffer(bytes: Array(repeating: 1, count: bodyBytes))), to: &buffer)
        }
        return buffer
    }

    private func channel() throws -> (EmbeddedChannel, Recorder) {
        let lookahead = LocalAPIFrameLookahead()
        let recorder = Recorder(lookahead)
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(LocalAPIFrameDecoder(lookahead: lookahead)))
        try channel.pipeline.syncOperations.addHandler(recorder)
        return (channel, recorder)
    }

    @Test func eachFrameButTheLastOfABufferHasAnotherBehindIt() throws {
        let (channel, recorder) = try channel()
        defer { _ = try? channel.finish() }
        try channel.writeInbound(bytes([1, 2, 3]))
        #expect(recorder.seen.map(\.0) == [1, 2, 3])
        #expect(recorder.seen.map(\.1) == [true, true, false])
        try channel.writeInbound(bytes([4]))
        #expect(recorder.seen.last?.1 == false, "a lone frame is the last of its burst")
    }

    @Test func aPartialFrameBehindDoesNotCount() throws {
        let (channel, recorder) = try channel()
        defer { _ = try? channel.finish() }
        var buffer = bytes([1])
        var partial = bytes([2])
        buffer.writeBytes(partial.readBytes(length: partial.readableBytes - 1)!)
        try channel.writeInbound(buffer)
        #expect(recorder.seen.map(\.1) == [false], "the frame behind is not whole yet")
        try channel.writeInbound(partial)
        #expect(recorder.seen.map(\.0) == [1, 2])
        #expect(recorder.seen.map(\.1) == [false, false])
    }
}
