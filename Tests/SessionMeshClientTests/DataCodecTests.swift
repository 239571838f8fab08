import Foundation
import MeshLocalAPI
import NIOCore
import SessionMesh
import Testing

/// The data-operation body codecs of MeshLocalAPI: round trips and strict rejection.
@Suite("local API data codecs")
struct DataCodecTests {
    static let envelope = AnySessionSyncEnvelope(
        metadata: SessionSyncMetadata(sessionID: UUID(), featureID: "demo", sourcePeerID: "AAAAAAA-BBBBBBB",
                                      eventID: UUID(), sequence: 7, causalTimestamp: Date(timeIntervalSince1970: 1_763_768_400.5),
                                      monotonicTimestamp: 12.25, payloadType: "text", acknowledgedSequence: 3),
        payload: Data("hello".utf8))
    static let snapshot = AnySessionSyncSnapshot(
        metadata: envelope.metadata, revision: 42, reflectedSequences: ["AAAAAAA": 7, "BBB": 1], state: Data(#"{"page":3}"#.utf8))
    static let request = SessionSnapshotRequest(sessionID: UUID(), featureID: "demo", requestingPeerID: "me",
                                                targetPeerID: "you", expectedSequence: 4, receivedSequence: 9)

    @Test func binaryBodiesRoundTrip() throws {
        let send = MeshSendRequest(mode: .reliableEventually, target: "AAAAAAA", envelope: Self.envelope)
        #expect(try MeshSendRequest.decode(send.encode()) == send)
        let publish = MeshSnapshotPublishRequest(target: "", snapshot: Self.snapshot)
        #expect(try MeshSnapshotPublishRequest.decode(publish.encode()) == publish)
        let latest = MeshSnapshotLatestReply(peer: "AAAAAAA-BBBBBBB", snapshot: Self.snapshot)
        #expect(try MeshSnapshotLatestReply.decode(latest.encode()) == latest)
        let event = MeshEnvelopeEvent(isRedelivery: true, inboxID: 1 << 40, from: "AAAAAAA-BBBBBBB", mode: .reliableEventually, envelope: Self.envelope)
        #expect(try MeshEnvelopeEvent.decode(event.encode()) == event)
        let snapshotEvent = MeshSnapshotEvent(from: "ü-peer", snapshot: Self.snapshot)
        #expect(try MeshSnapshotEvent.decode(snapshotEvent.encode()) == snapshotEvent)
        let requestEvent = MeshSnapshotRequestEvent(from: "peer", request: Self.request)
        #expect(try MeshSnapshotRequestEvent.decode(requestEvent.encode()) == requestEvent)
    }

    @Test func theSendLayoutIsModeThenTargetThenTheCoreEncoding() throws {
        let body = try MeshSendRequest(mode: .realtimeBestEffort, target: "AB", envelope: Self.envelope).encode()
        let bytes = Array(body.readableBytesView)
        #expect(Array(bytes.prefix(4)) == [1, 2, 0x41, 0x42])
        #expect(Array(bytes.dropFirst(4)) == (try SessionWireCodec.encode(Self.envelope)))
        let event = try MeshEnvelopeEvent(isRedelivery: false, inboxID: 258, from: "", mode: .reliableEventually, envelope: Self.envelope).encode()
        #expect(Array(event.readableBytesView.prefix(11)) == [0, 0, 0, 0, 0, 0, 0, 1, 2, 0, 2])
    }

    @Test func everyTruncationIsABadRequestNamingTheOperation() throws {
        let body = try MeshEnvelopeEvent(inboxID: 9, from: "peer", mode: .realtimeBestEffort, envelope: Self.envelope).encode()
        let bytes = Array(body.readableBytesView)
        for length in 0..<bytes.count {
            let prefix = ByteBuffer(bytes: bytes.prefix(length))
            #expect(throws: LocalAPIErrorBody.self) { try MeshEnvelopeEvent.decode(prefix) }
            do {
                _ = try MeshEnvelopeEvent.decode(prefix)
            } catch {
                #expect(error.code == "bad-request")
                #expect(error.message.hasPrefix("envelope: "))
            }
        }
    }

    @Test func trailingBytesUnknownModesFlagsAndBadUTF8AreRejected() throws {
        var trailing = try MeshSendRequest(mode: .reliableEventually, envelope: Self.envelope).encode()
        trailing.writeInteger(UInt8(0))
        #expect(throws: LocalAPIErrorBody.self) { try MeshSendRequest.decode(trailing) }

        for mode: UInt8 in [0, 3, 4, 6, 255] {
            var body = ByteBuffer(bytes: [mode, 0])
            body.writeBytes(try SessionWireCodec.encode(Self.envelope))
            do {
                _ = try MeshSendRequest.decode(body)
                Issue.record("mode \(mode) was accepted")
            } catch {
                #expect(error.code == "invalid-argument")
            }
        }

        var flagged = try MeshEnvelopeEvent(inboxID: 1, from: "p", mode: .reliableEventually, envelope: Self.envelope).encode()
        flagged.setInteger(UInt8(0x82), at: flagged.readerIndex)
        #expect(throws: LocalAPIErrorBody.self) { try MeshEnvelopeEvent.decode(flagged) }

        var badUTF8 = ByteBuffer(bytes: [2, 2, 0xC3, 0x28])
        badUTF8.writeBytes(try SessionWireCodec.encode(Self.envelope))
        do {
            _ = try MeshSendRequest.decode(badUTF8)
            Issue.record("invalid UTF-8 was accepted")
        } catch {
            #expect(error.message.contains("'target' is not valid UTF-8"))
        }

        // Invalid UTF-8 whose repair has the same length ("F0 90 80" + "A" decodes as U+FFFD "A",
        // 4 bytes too): still refused, and valid multi-byte text is taken as is.
        for (target, valid) in [([UInt8]([0xF0, 0x90, 0x80, 0x41]), false), (Array("gerät-😀".utf8), true), ([], true)] {
            var body = ByteBuffer(bytes: [2, UInt8(target.count)] + target)
            body.writeBytes(try SessionWireCodec.encode(Self.envelope))
            let decoded = try? MeshSendRequest.decode(body)
            #expect((decoded != nil) == valid, "\(target)")
            if valid { #expect(decoded.map { Array($0.target.utf8) } == target) }
        }

        // A snapshot where an envelope belongs.
        var wrongKind = ByteBuffer(bytes: [2, 0])
        wrongKind.writeBytes(try SessionWireCodec.encode(Self.snapshot))
        #expect(throws: LocalAPIErrorBody.self) { try MeshSendRequest.decode(wrongKind) }
    }

    @Test func aTargetLongerThan255BytesCannotBeEncoded() {
        let send = MeshSendRequest(mode: .reliableEventually, target: String(repeating: "x", count: 256), envelope: Self.envelope)
        #expect(throws: LocalAPIErrorBody.self) { try send.encode() }
    }

    @Test func eventFramesRoundTripWithTheRightFlags() throws {
        let session = MeshSessionRecord(sessionID: UUID(), featureID: "demo", owner: "app", status: "running",
                                    updatedAt: 1_763_768_400, revision: 2, sourcePeer: "AAAAAAA")
        let events: [LocalAPIDataEvent] = [
            .envelope(MeshEnvelopeEvent(inboxID: 0, from: "p", mode: .realtimeBestEffort, envelope: Self.envelope)),
            .snapshot(MeshSnapshotEvent(from: "p", snapshot: Self.snapshot)),
            .snapshotRequest(MeshSnapshotRequestEvent(from: "p", request: Self.request)),
            .reachability(MeshReachabilityEvent(peer: "p", featureID: "demo", reachable: false, reason: .appDetached)),
            .anchor(MeshAnchorEvent(sessionID: UUID(), featureID: "demo", revision: 3,
                                anchor: MeshTimerAnchorBody(SessionTimerAnchor.started(at: Date(timeIntervalSince1970: 1_763_768_400))), from: "p")),
            .session(MeshSessionEvent(session, change: .closed)),
            .watermark(MeshWatermarkBody(sessionID: UUID(), featureID: "demo", peer: "p", sequence: 99)),
            .eventsDropped(EventsDroppedEvent(dropped: 17)),
        ]
        for event in events {
            let frame = try event.frame(requestID: 5)
            #expect(frame.kind == .event)
            #expect(frame.requestID == 5)
            #expect(frame.flags.contains(.binaryBody) == (0x0180..<0x0183).contains(frame.operation.rawValue))
            #expect(try LocalAPIDataEvent.decode(frame) == event)
            var flipped = frame
            flipped.flags = frame.flags.contains(.binaryBody) ? [] : .binaryBody
            #expect(throws: LocalAPIErrorBody.self) { try LocalAPIDataEvent.decode(flipped) }
        }
        let unknown = LocalAPIFrame(kind: .event, operation: LocalAPIOperation(rawValue: 0x01FF), requestID: 1, body: ByteBuffer())
        #expect(throws: LocalAPIErrorBody.self) { try LocalAPIDataEvent.decode(unknown) }
    }

    @Test func jsonBodiesUseTheDocumentedKeys() throws {
        let session = UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!
        let attach = String(buffer: try LocalAPIJSON.encode(MeshAttachRequest(features: ["demo"], sessionID: session, app: "x")))
        #expect(attach == #"{"app":"x","features":["demo"],"sessionID":"E621E1F8-C36C-495A-93FC-0C247A3E6E5F"}"#)
        let reach = try LocalAPIJSON.decode(MeshReachabilityEvent.self, from: ByteBuffer(string: #"{"peer":"P","reachable":true,"reason":"lease-expired"}"#),
                                            operation: .reachabilityEvent)
        #expect(reach == MeshReachabilityEvent(peer: "P", reachable: true, reason: .leaseExpired))
        let anchor = String(buffer: try LocalAPIJSON.encode(MeshTimerAnchorBody(startedAt: 1_763_768_400.25, accumulatedElapsedBeforeAnchor: 1.5, isPaused: false)))
        #expect(anchor == #"{"accumulatedElapsedBeforeAnchor":1.5,"isPaused":false,"startedAt":1763768400.25}"#)
        #expect(throws: LocalAPIErrorBody.self) {
            try LocalAPIJSON.decode(MeshReachabilityEvent.self, from: ByteBuffer(string: #"{"peer":"P","reachable":true,"reason":"bored"}"#), operation: .reachabilityEvent)
        }
        #expect(throws: LocalAPIErrorBody.self) { try MeshAttachRequest(features: []).validate() }
        #expect(throws: LocalAPIErrorBody.self) { try MeshAttachRequest(features: [String(repeating: "f", count: 256)]).validate() }
    }

    @Test func anAnchorSurvivesTheLocalAPIFormWithinAMicrosecond() {
        let start = Date(timeIntervalSince1970: 1_763_768_400.123456)
        let anchor = SessionTimerAnchor.started(at: start, duration: 600).paused(at: start.addingTimeInterval(30)).resumed(at: start.addingTimeInterval(45))
        let back = MeshTimerAnchorBody(anchor).anchor
        let at = start.addingTimeInterval(100)
        #expect(abs(back.elapsedMicroseconds(at: at) - anchor.elapsedMicroseconds(at: at)) <= 1)
        #expect(MeshTimerAnchorBody(startedAt: .nan, accumulatedElapsedBeforeAnchor: 0, isPaused: false).validateThrows())
    }

    @Test func dataOperationsHaveTheirDocumentedNames() {
        #expect(LocalAPIOperation.attach.name == "attach")
        #expect(LocalAPIOperation.snapshotLatest.name == "snapshot.latest")
        #expect(LocalAPIOperation.watermarkEvent.name == "watermark")
        #expect(LocalAPIOperation(rawValue: 0x0FFF).name == "op-0x0FFF")
        #expect(LocalAPIOperation.inbox.name == "inbox")
        #expect(Set(LocalAPIOperation.dataOperations.map(\.rawValue)).count == 14)
        #expect(LocalAPIOperation.dataOperations.allSatisfy { LocalAPIOperation.dataRange.contains($0.rawValue) })
    }
}

extension MeshTimerAnchorBody {
    fileprivate func validateThrows() -> Bool {
        do { try validate(operation: .anchorSet); return false } catch { return true }
    }
}
