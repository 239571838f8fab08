import Testing
@testable import MeshDaemon

/// The relay message layout of docs/PROTOCOL.md ("The relay path"), its strict decoder, and
/// the sender that cuts a path's stream into messages.
@Suite("Relay envelope")
struct RelayEnvelopeTests {
    static let path = RelayPathID(rawValue: 0x0102_0304_0506_0708)

    /// (what, message, padding, hex as the page shows it)
    static let examples: [(String, RelayEnvelope, RelayPadding, String)] = [
        ("stream data: the channel preamble, first message of its path",
         .stream(path, sequence: 0, data: [0x53, 0x4D, 0x01, 0x01]), .none,
         "01 01 01 02 03 04 05 06 07 08 00 00 00 00 00 00 00 00 00 04 53 4d 01 01"),
        ("stream close after three messages", .close(path, sequence: 3), .none,
         "01 02 01 02 03 04 05 06 07 08 00 00 00 00 00 00 00 03 00 00"),
        ("datagram aa bb, padded to 64 bytes", .unnumbered(.datagram, payload: [0xAA, 0xBB]), .buckets,
         "01 03 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 02 aa bb "
            + Array(repeating: "00", count: 42).joined(separator: " ")),
    ]

    @Test func theCodeWritesTheBytesThePageShows() {
        for (what, envelope, padding, hex) in Self.examples {
            #expect(envelope.encode(padding: padding).map(ProtocolPage.hex) == hex, "\(what)")
        }
    }

    @Test func thePageShowsEveryExample() throws {
        let page = try ProtocolPage.compactText()
        for (what, _, _, hex) in Self.examples {
            #expect(page.contains(ProtocolPage.compact(hex)), "docs/PROTOCOL.md no longer shows the \(what) example: \(hex)")
        }
    }

    @Test func everyKindDecodesBackPaddedOrNot() throws {
        let envelopes: [RelayEnvelope] = [
            .stream(Self.path, sequence: 9, data: [1, 2, 3]), .close(Self.path, sequence: .max),
            .unnumbered(.datagram, payload: [7]), .unnumbered(.mailboxItem, payload: Array(repeating: 5, count: 300)),
            .unnumbered(.mailboxAck, payload: [0]), .unnumbered(.mailboxSnapshot, payload: [3, 3]),
            .stream(Self.path, sequence: 1, data: Array(repeating: 0xEE, count: RelayEnvelope.maximumPayload)),
        ]
        for envelope in envelopes {
            for padding in [RelayPadding.none, .buckets] {
                let bytes = try #require(envelope.encode(padding: padding))
                #expect(try RelayEnvelope(decoding: bytes) == envelope)
                #expect(bytes.count <= RelayEnvelope.maximumSize)
            }
        }
    }

    @Test(arguments: [(1, 64), (44, 64), (45, 128), (200, 256), (1000, 1024), (1300, 2048), (65_516, 65_536)])
    func paddingRoundsUpToTheNextBucket(payload: Int, size: Int) throws {
        let bytes = try #require(RelayEnvelope.unnumbered(.datagram, payload: Array(repeating: 1, count: payload)).encode(padding: .buckets))
        #expect(bytes.count == size)
        #expect(RelayEnvelope.unnumbered(.datagram, payload: Array(repeating: 1, count: payload)).encode()?.count == payload + 20)
    }

    @Test func messagesThatBreakTheirKindsRulesAreNeitherWrittenNorRead() {
        let invalid: [RelayEnvelope] = [
            .stream(.none, sequence: 0, data: [1]),                     // stream data outside a path
            .stream(Self.path, sequence: 0, data: []),                  // empty stream data
            .close(.none, sequence: 1),
            RelayEnvelope(kind: .streamClose, pathID: Self.path, sequence: 1, payload: [1]),
            RelayEnvelope(kind: .datagram, pathID: Self.path, sequence: 0, payload: [1]),
            RelayEnvelope(kind: .mailboxItem, pathID: .none, sequence: 4, payload: [1]),
            .unnumbered(.mailboxAck, payload: []),
            .unnumbered(.datagram, payload: Array(repeating: 0, count: RelayEnvelope.maximumPayload + 1)),
        ]
        for envelope in invalid {
            #expect(envelope.encode() == nil, "\(envelope.kind) \(envelope.pathID) \(envelope.sequence) \(envelope.payload.count)")
            // Written by hand the same way, the decoder refuses it.
            var writer = WireWriter()
            writer.u8(1); writer.u8(envelope.kind.rawValue); writer.u64(envelope.pathID.rawValue); writer.u64(envelope.sequence)
            writer.u16(UInt16(truncatingIfNeeded: envelope.payload.count)); writer.raw(envelope.payload)
            #expect(throws: WireFormatError.self) { try RelayEnvelope(decoding: writer.bytes) }
        }
    }

    @Test func otherVersionsUnknownKindsShortLengthsAndDirtyPaddingAreRefused() throws {
        let good = try #require(RelayEnvelope.stream(Self.path, sequence: 0, data: [9, 9]).encode())
        var version = good; version[0] = 2
        var kind = good; kind[1] = 7
        var zeroKind = good; zeroKind[1] = 0
        var long = good; long[19] = 3
        let padded = good + [0, 0, 1]
        let tooLarge = good + Array(repeating: 0, count: RelayEnvelope.maximumSize)
        for bytes in [version, kind, zeroKind, long, padded, tooLarge, [], Array(good.prefix(19))] {
            #expect(throws: WireFormatError.self) { try RelayEnvelope(decoding: bytes) }
        }
        #expect(try RelayEnvelope(decoding: good + [0, 0, 0]).payload == [9, 9])
    }

    @Test func theSenderNumbersAndCutsTheStreamAndStopsAfterClosing() throws {
        var sender = RelayStreamSender(pathID: Self.path, padding: .buckets)
        let stream = (0..<(RelayEnvelope.maximumPayload * 2 + 10)).map { UInt8(truncatingIfNeeded: $0 * 7) }
        let messages = sender.messages(carrying: stream) + sender.messages(carrying: [1, 2, 3]) + sender.messages(carrying: [])
        #expect(messages.count == 4)
        let envelopes = try messages.map { try RelayEnvelope(decoding: $0) }
        #expect(envelopes.map(\.sequence) == [0, 1, 2, 3])
        #expect(envelopes.allSatisfy { $0.pathID == Self.path && $0.kind == .streamData })
        #expect(envelopes.flatMap(\.payload) == stream + [1, 2, 3])
        let closeMessage = sender.closeMessage()
        let close = try RelayEnvelope(decoding: try #require(closeMessage))
        #expect(close == .close(Self.path, sequence: 4))
        #expect(sender.closeMessage() == nil)
        #expect(sender.messages(carrying: [1]).isEmpty)
    }

    @Test func randomPathIDsAreNeverTheUnnumberedID() {
        let ids = (0..<64).map { _ in RelayPathID.random() }
        #expect(!ids.contains(.none))
        #expect(Set(ids).count == ids.count)
        #expect(Self.path.description == "0102030405060708")
    }
}
