import Foundation
import SessionMesh
import Testing

@Suite("Wire codec")
struct WireCodecTests {
    static let metadata = SessionSyncMetadata(
        sessionID: Fixture.session, featureID: "tally", sourcePeerID: "a", eventID: Fixture.session,
        sequence: 300, causalTimestamp: Fixture.t0, payloadType: "TallyEvent")

    func code(of body: () throws -> Any) -> SessionWireError.Code? {
        do { _ = try body(); return nil } catch let error as SessionWireError { return error.code } catch { return nil }
    }

    @Test func randomMessagesRoundTripAndEncodeCanonically() throws {
        var r = SessionSeededRandom(seed: 7)
        for _ in 0..<2_000 {
            let message = WireSamples.message(&r)
            let bytes = try SessionWireCodec.encode(message)
            let decoded = try SessionWireCodec.decode(bytes)
            #expect(decoded == message)
            #expect(try SessionWireCodec.encode(decoded) == bytes)
            #expect(try SessionWireCodec.decode(Data(bytes)) == message)
        }
    }

    @Test func envelopeLayoutMatchesTheDocumentedDiagram() throws {
        let bytes = try SessionWireCodec.encode(AnySessionSyncEnvelope(metadata: Self.metadata, payload: Data([0xAA])))
        #expect(Array(bytes[0..<4]) == [0x53, 0x4D, 0x01, 0x01])
        #expect(bytes[4] == 0x01)                       // protocolVersion 1
        #expect(bytes[21] == 0x00)                      // flags: no optional fields
        #expect(Array(bytes[22..<28]) == [0x05] + Array("tally".utf8))
        #expect(Array(bytes[28..<30]) == [0x01, 0x61])  // sourcePeerID "a"
        #expect(Array(bytes[46..<48]) == [0xAC, 0x02])  // sequence 300 as LEB128
        #expect(Array(bytes.suffix(2)) == [0x01, 0xAA]) // payload
        #expect(bytes.count == 48 + 8 + 11 + 2)
        #expect(try SessionWireCodec.kind(of: bytes) == .envelope)
    }

    @Test func decodingTheWrongKindIsAClearError() throws {
        let request = try SessionWireCodec.encode(SessionSnapshotRequest(sessionID: Fixture.session, requestingPeerID: "b"))
        #expect(code { try SessionWireCodec.decodeEnvelope(request) } == .unexpectedKind)
        #expect(try SessionWireCodec.decodeSnapshotRequest(request).requestingPeerID == "b")
    }

    @Test func malformedInputsGiveTheirOwnCodes() throws {
        let good = try SessionWireCodec.encode(AnySessionSyncEnvelope(metadata: Self.metadata, payload: Data([1, 2, 3])))
        func mutate(_ body: (inout [UInt8]) -> Void) -> [UInt8] { var b = good; body(&b); return b }
        #expect(code { try SessionWireCodec.decode([UInt8]()) } == .truncated)
        #expect(code { try SessionWireCodec.decode(mutate { $0[0] = 0x00 }) } == .badMagic)
        #expect(code { try SessionWireCodec.decode(mutate { $0[2] = 0x02 }) } == .unsupportedFormatVersion)
        #expect(code { try SessionWireCodec.decode(mutate { $0[3] = 0x09 }) } == .unknownKind)
        #expect(code { try SessionWireCodec.decode(mutate { $0.append(0) }) } == .trailingBytes)
        #expect(code { try SessionWireCodec.decode(mutate { $0[21] = 0x80 }) } == .reservedFlagsSet)
        #expect(code { try SessionWireCodec.decode(mutate { $0[23] = 0xFF }) } == .invalidUTF8)
        #expect(code { try SessionWireCodec.decode(mutate { $0[4] = 0x81; $0.insert(0x00, at: 5) }) } == .malformedVarint)
        #expect(code { try SessionWireCodec.decode(mutate { $0.replaceSubrange(48..<56, with: [0x7F, 0xF8, 0, 0, 0, 0, 0, 0]) }) } == .nonFiniteTimestamp)
        #expect(code { try SessionWireCodec.decode(mutate { $0[22] = 0x7F }) } == .truncated)
        let tight = SessionWireLimits(maxStringBytes: 4)
        #expect(code { try SessionWireCodec.decode(good, limits: tight) } == .limitExceeded)
        for cut in 0..<good.count {
            #expect(code { try SessionWireCodec.decode(Array(good[0..<cut])) } == .truncated)
        }
    }

    @Test func hugeLengthsAndVarintsAreRefusedWithoutAllocating() throws {
        var b: [UInt8] = [0x53, 0x4D, 0x01, 0x03, 0x01] + [UInt8](repeating: 0, count: 16) + [0x00]
        b += [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01]   // 2^64-1 length
        #expect(code { try SessionWireCodec.decode(b) } == .limitExceeded)
        b.removeLast(1); b += [0x02]                                         // above 2^64-1
        #expect(code { try SessionWireCodec.decode(b) } == .malformedVarint)
        b.removeLast(1); b += [0xFF, 0x01]                                   // 11 bytes
        #expect(code { try SessionWireCodec.decode(b) } == .malformedVarint)
    }

    @Test func snapshotPeersMustBeStrictlyAscending() throws {
        let snapshot = AnySessionSyncSnapshot(metadata: Self.metadata, revision: 9, reflectedSequences: ["a": 1, "b": 2], state: Data())
        var bytes = try SessionWireCodec.encode(snapshot)
        let a = bytes.firstIndex(of: 0x61, after: 60)
        let bIndex = bytes.lastIndex(of: 0x62)
        try #require(a != nil && bIndex != nil)
        bytes[bIndex!] = 0x61
        #expect(code { try SessionWireCodec.decode(bytes) } == .unsortedPeers)
    }

    @Test func encodingRefusesWhatDecodingWouldRefuse() {
        var m = Self.metadata
        m.featureID = String(repeating: "x", count: 2_000)
        #expect(code { try SessionWireCodec.encode(AnySessionSyncEnvelope(metadata: m, payload: Data())) } == .limitExceeded)
        m = Self.metadata
        m.causalTimestamp = Date(timeIntervalSinceReferenceDate: .nan)
        #expect(code { try SessionWireCodec.encode(AnySessionSyncEnvelope(metadata: m, payload: Data())) } == .nonFiniteTimestamp)
        m = Self.metadata
        m.protocolVersion = -1
        #expect(code { try SessionWireCodec.encode(AnySessionSyncEnvelope(metadata: m, payload: Data())) } == .valueOutOfRange)
        #expect(code { try SessionWireCodec.encode(AnySessionSyncEnvelope(metadata: Self.metadata, payload: Data(count: 100)), limits: SessionWireLimits(maxPayloadBytes: 99)) } == .limitExceeded)
    }
}

extension Array where Element == UInt8 {
    func firstIndex(of value: UInt8, after start: Int) -> Int? { self[start...].firstIndex(of: value) }
}

@Suite("Wire codec appending")
struct WireCodecAppendingTests {
    @Test func appendingWritesAfterAPrefixAndRollsBackOnError() throws {
        let request = SessionWireCodec.Message.snapshotRequest(SessionSnapshotRequest(sessionID: Fixture.session, requestingPeerID: "b"))
        var frame: [UInt8] = [0xF0, 0x0D]
        try SessionWireCodec.encode(request, appendingTo: &frame)
        #expect(Array(frame.dropFirst(2)) == (try SessionWireCodec.encode(request)))
        let tooLong = SessionWireCodec.Message.snapshotRequest(SessionSnapshotRequest(sessionID: Fixture.session, requestingPeerID: String(repeating: "x", count: 5_000)))
        let before = frame
        #expect(throws: SessionWireError.self) { try SessionWireCodec.encode(tooLong, appendingTo: &frame) }
        #expect(frame == before)
    }
}
