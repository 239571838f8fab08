import Testing
import NIOCore
import NIOEmbedded
@testable import MeshDaemon

@Suite("Channel wire formats")
struct ChannelWireFormatTests {
    @Test func channelMessagesRoundTrip() throws {
        let messages: [ChannelMessage] = [
            .keepaliveRequest(t1: -5), .keepaliveReply(t1: 1, t2: 2, t3: Int64.max), .pingRequest(id: 7),
            .pingReply(id: UInt32.max), .application([1, 2, 3]), .application([]), .unpaired,
            .rekeyInitiation([9, 9]), .rekeyResponse([]), .rekeyConfirm, .confirm,
        ]
        for message in messages {
            #expect(try ChannelMessage(decoding: message.encode()) == message)
        }
    }

    @Test func malformedChannelMessagesThrow() {
        #expect(throws: WireFormatError.self) { try ChannelMessage(decoding: []) }
        #expect(throws: WireFormatError.self) { try ChannelMessage(decoding: [99]) }
        #expect(throws: WireFormatError.self) { try ChannelMessage(decoding: [1, 0, 0]) }
        #expect(throws: WireFormatError.self) { try ChannelMessage(decoding: [6, 0]) }
    }

    @Test func handshakePayloadRoundTrip() throws {
        let payload = HandshakePayload(sessionIndex: 0xDEAD_BEEF, udpPort: 47_001, wallNanoseconds: 1_700_000_000_000_000_000, isRekey: true)
        let bytes = payload.encode()
        #expect(bytes.count == HandshakePayload.encodedSize)
        #expect(try HandshakePayload(decoding: bytes) == payload)
        #expect(throws: WireFormatError.self) { try HandshakePayload(decoding: Array(bytes.dropLast())) }
        #expect(throws: WireFormatError.self) { try HandshakePayload(decoding: [2] + bytes.dropFirst()) }
    }

    @Test func datagramHeaderParses() {
        let header = DatagramHeader(receiverIndex: 0x0102_0304)
        #expect(header.bytes == [1, 1, 2, 3, 4])
        #expect(DatagramHeader(parsing: header.bytes + [0]) == header)
        #expect(DatagramHeader(parsing: header.bytes) == nil)       // nothing after the header
        #expect(DatagramHeader(parsing: [2, 1, 2, 3, 4, 0]) == nil) // other type
    }

    @Test func preambleAcceptsOnlyTheThreeKinds() {
        #expect(ConnectionKind(preamble: [0x53, 0x4D, 1, 1]) == .channel)
        #expect(ConnectionKind(preamble: [0x53, 0x4D, 1, 2]) == .pairing)
        #expect(ConnectionKind(preamble: [0x53, 0x4D, 1, 3]) == .removalQuery)
        #expect(ConnectionKind(preamble: [0x53, 0x4D, 2, 1]) == nil)
        #expect(ConnectionKind(preamble: [0x53, 0x4D, 1, 4]) == nil)
        #expect(ConnectionKind(preamble: [0x47, 0x45, 0x54, 0x20]) == nil)
    }

    @Test func frameDecoderSplitsPreambleAndFrames() throws {
        let channel = EmbeddedChannel(handler: ByteToMessageHandler(WireFrameDecoder(expectsPreamble: true)))
        var input = channel.allocator.buffer(capacity: 32)
        input.writeBytes(ConnectionKind.channel.preamble + (try WireFrame.encode([1, 2, 3])) + [0, 2, 9])
        try channel.writeInbound(input)
        #expect(try channel.readInbound(as: WireFrame.self) == .preamble(.channel))
        #expect(try channel.readInbound(as: WireFrame.self) == .frame([1, 2, 3]))
        #expect(try channel.readInbound(as: WireFrame.self) == nil)
        var rest = channel.allocator.buffer(capacity: 1)
        rest.writeBytes([8])
        try channel.writeInbound(rest)
        #expect(try channel.readInbound(as: WireFrame.self) == .frame([9, 8]))
        #expect(try channel.finish().isClean)
    }

    @Test func frameDecoderRejectsABadPreamble() throws {
        let channel = EmbeddedChannel(handler: ByteToMessageHandler(WireFrameDecoder(expectsPreamble: true)))
        var input = channel.allocator.buffer(capacity: 8)
        input.writeBytes(Array("GET / HTTP/1.1".utf8))
        #expect(throws: WireFormatError.self) { try channel.writeInbound(input) }
        #expect(try channel.readInbound(as: WireFrame.self) == nil)
        _ = try? channel.finish()
    }

    @Test func roundTripSummaryUsesNearestRank() throws {
        let summary = try #require(RoundTripSummary((1...100).map(Double.init)))
        #expect(summary.minimum == 1)
        #expect(summary.p50 == 50)
        #expect(summary.p99 == 99)
        #expect(summary.maximum == 100)
        #expect(RoundTripSummary([]) == nil)
    }
}
