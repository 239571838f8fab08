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
        let send = SendRequest(mode: .reliableEventually, target: "AAAAAAA", envelope: Self.envelope)
        #expect(try SendRequest.decode(send.encode()) == send)
        let publish = SnapshotPublishRequest(target: "", snapshot: Self.snapshot)
        #expect(try SnapshotPublishRequest.decode(publish.encode()) == publish)
        let latest = SnapshotLatestReply(peer: "AAAAAAA-BBBBBBB", snapshot: Self.snapshot)
        #expect(try SnapshotLatestReply.decode(latest.encode()) == latest)
        let event = EnvelopeEvent(isRedelivery: true, inboxID: 1 << 40, from: "AAAAAAA-BBBBBBB", mode: .reliableEventually, envelope: Self.envelope)
        #expect(try EnvelopeEvent.decode(event.encode()) == event)
        let snapshotEvent = SnapshotEvent(from: "ü-peer", snapshot: Self.snapshot)
        #expect(try SnapshotEvent.decode(snapshotEvent.encode()) == snapshotEvent)
        let requestEvent = SnapshotRequestEvent(from: "peer", request: Self.request)
        #expect(try SnapshotRequestEvent.decode(requestEvent.encode()) == requestEvent)
    }

    @Test func theSendLayoutIsModeThenTargetThenTheCoreEncoding() throws {
        let body = try SendRequest(mode: .realtimeBestEffort, target: "AB", envelope: Self.envelope).encode()
        let bytes = Array(body.readableBytesView)
        #expect(Array(bytes.prefix(4)) == [1, 2, 0x41, 0x42])
        #expect(Array(bytes.dropFirst(4)) == (try SessionWireCodec.encode(Self.envelope)))
        let event = try EnvelopeEvent(isRedelivery: false, inboxID: 258, from: "", mode: .reliableEventually, envelope: Self.envelope).encode()
        #expect(Array(event.readableBytesView.prefix(11)) == [0, 0, 0, 0, 0, 0, 0, 1, 2, 0, 2])
    }

    @Test func everyTruncationIsABadRequestNamingTheOperation() throws {
        let body = try EnvelopeEvent(inboxID: 9, from: "peer", mode: .realtimeBestEffort, envelope: Self.envelope).encode()
        let bytes = Array(body.readableBytesView)
        for length in 0..<bytes.count {
            let prefix = ByteBuffer(bytes: bytes.prefix(length))
            #expect(throws: LocalAPIErrorBody.self) { try EnvelopeEvent.decode(prefix) }
            do {
                _ = try EnvelopeEvent.decode(prefix)
            } catch {
                #expect(error.code == "bad-request")
                #expect(error.message.hasPrefix("envelope: "))
            }
        }
    }

    @Test func trailingBytesUnknownModesFlagsAndBadUTF8AreRejected() throws {
        var trailing = try SendRequest(mode: .reliableEventually, envelope: Self.envelope).encode()
        trailing.writeInteger(UInt8(0))
        #expect(throws: LocalAPIErrorBody.self) { try SendRequest.decode(trailing) }

        for mode: UInt8 in [0, 3, 4, 6, 255] {
            var body = ByteBuffer(bytes: [mode, 0])
            body.writeBytes(try SessionWireCodec.encode(Self.envelope))
            #expect(throws: LocalAPIErrorBody.self) { try SendRequest.decode(body) }
        }

        var flagged = try EnvelopeEvent(inboxID: 1, from: "p", mode: .reliableEventually, envelope: Self.envelope).encode()
        flagged.setInteger(UInt8(0x82), at: flagged.readerIndex)
        #expect(throws: LocalAPIErrorBody.self) { try EnvelopeEvent.decode(flagged) }

        var badUTF8 = ByteBuffer(bytes: [2, 2, 0xC3, 0x28])
        badUTF8.writeBytes(try SessionWireCodec.encode(Self.envelope))
        do {
            _ = try SendRequest.decode(badUTF8)
            Issue.record("invalid UTF-8 was accepted")
        } catch {
            #expect(error.message.contains("'target' is not valid UTF-8"))
        }

        // A snapshot where an envelope belongs.
        var wrongKind = ByteBuffer(bytes: [2, 0])
        wrongKind.writeBytes(try SessionWireCodec.encode(Self.snapshot))
        #expect(throws: LocalAPIErrorBody.self) { try SendRequest.decode(wrongKind) }
    }

    @Test func aTargetLongerThan255BytesCannotBeEncoded() {
        let send = SendRequest(mode: .reliableEventually, target: String(repeating: "x", count: 256), envelope: Self.envelope)
        #expect(throws: LocalAPIErrorBody.self) { try send.encode() }
    }

    @Test func eventFramesRoundTripWithTheRightFlags() throws {
        let session = SessionRecord(sessionID: UUID(), featureID: "demo", owner: "app", status: "running",
                                    updatedAt: 1_763_768_400, revision: 2, sourcePeer: "AAAAAAA")
        let events: [LocalAPIDataEvent] = [
            .envelope(EnvelopeEvent(inboxID: 0, from: "p", mode: .realtimeBestEffort, envelope: Self.envelope)),
            .snapshot(SnapshotEvent(from: "p", snapshot: Self.snapshot)),
            .snapshotRequest(SnapshotRequestEvent(from: "p", request: Self.request)),
            .reachability(ReachabilityEvent(peer: "p", featureID: "demo", reachable: false, reason: .appDetached)),
            .anchor(AnchorEvent(sessionID: UUID(), featureID: "demo", revision: 3,
                                anchor: TimerAnchorBody(SessionTimerAnchor.started(at: Date(timeIntervalSince1970: 1_763_768_400))), from: "p")),
            .session(SessionEvent(session, change: .closed)),
            .watermark(WatermarkBody(sessionID: UUID(), featureID: "demo", peer: "p", sequence: 99)),
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
        let attach = String(buffer: try LocalAPIJSON.encode(AttachRequest(features: ["demo"], sessionID: session, app: "x")))
        #expect(attach == #"{"app":"x","features":["demo"],"sessionID":"E621E1F8-C36C-495A-93FC-0C247A3E6E5F"}"#)
        let reach = try LocalAPIJSON.decode(ReachabilityEvent.self, from: ByteBuffer(string: #"{"peer":"P","reachable":true,"reason":"lease-expired"}"#),
                                            operation: .reachabilityEvent)
        #expect(reach == ReachabilityEvent(peer: "P", reachable: true, reason: .leaseExpired))
        let anchor = String(buffer: try LocalAPIJSON.encode(TimerAnchorBody(startedAt: 1_763_768_400.25, accumulatedElapsedBeforeAnchor: 1.5, isPaused: false)))
        #expect(anchor == #"{"accumulatedElapsedBeforeAnchor":1.5,"isPaused":false,"startedAt":1763768400.25}"#)
        #expect(throws: LocalAPIErrorBody.self) {
            try LocalAPIJSON.decode(ReachabilityEvent.self, from: ByteBuffer(string: #"{"peer":"P","reachable":true,"reason":"bored"}"#), operation: .reachabilityEvent)
        }
        #expect(throws: LocalAPIErrorBody.self) { try AttachRequest(features: []).validate() }
        #expect(throws: LocalAPIErrorBody.self) { try AttachRequest(features: [String(repeating: "f", count: 256)]).validate() }
    }

    @Test func anAnchorSurvivesTheLocalAPIFormWithinAMicrosecond() {
        let start = Date(timeIntervalSince1970: 1_763_768_400.123456)
        let anchor = SessionTimerAnchor.started(at: start, duration: 600).paused(at: start.addingTimeInterval(30)).resumed(at: start.addingTimeInterval(45))
        let back = TimerAnchorBody(anchor).anchor
        let at = start.addingTimeInterval(100)
        #expect(abs(back.elapsedMicroseconds(at: at) - anchor.elapsedMicroseconds(at: at)) <= 1)
        #expect(TimerAnchorBody(startedAt: .nan, accumulatedElapsedBeforeAnchor: 0, isPaused: false).validateThrows())
    }

    @Test func dataOperationsHaveTheirDocumentedNames() {
        #expect(LocalAPIOperation.attach.name == "attach")
        #expect(LocalAPIOperation.snapshotLatest.name == "snapshot.latest")
        #expect(LocalAPIOperation.watermarkEvent.name == "watermark")
        #expect(LocalAPIOperation(rawValue: 0x0FFF).name == "op-0x0FFF")
        #expect(Set(LocalAPIOperation.dataOperations.map(\.rawValue)).count == 13)
        #expect(LocalAPIOperation.dataOperations.allSatisfy { LocalAPIOperation.dataRange.contains($0.rawValue) })
    }
}

extension TimerAnchorBody {
    fileprivate func validateThrows() -> Bool {
        do { try validate(operation: .anchorSet); return false } catch { return true }
    }
}
