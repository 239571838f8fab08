import Foundation
@testable import MeshDaemon
import MeshLocalAPI
import NIOCore
import NIOEmbedded
import Testing

@Suite("Local API requests")
struct LocalAPIRequestTests {
    @Test(arguments: [
        (LocalAPIOperation.status, "", LocalAPIRequest.status),
        (.peers, "{}", .peers),
        (.hello, #"{"client":"py"}"#, .hello(HelloRequest(client: "py", protocolVersion: nil))),
        (.pairCreate, #"{"validFor":60}"#, .pairCreate(validFor: 60, replace: false, single: false)),
        (.pairCreate, "{}", .pairCreate(validFor: nil, replace: false, single: false)),
        (.pairCreate, #"{"replace":true}"#, .pairCreate(validFor: nil, replace: true, single: false)),
        (.pairCreate, #"{"single":true}"#, .pairCreate(validFor: nil, replace: false, single: true)),
        (.pairWait, #"{"code":"K7Q2-9XWM"}"#, .pairWait(code: "K7Q2-9XWM")),
        (.pairCancel, #"{"code":"K7Q2-9XWM"}"#, .pairCancel(code: "K7Q2-9XWM")),
        (.pairJoin, #"{"code":"C","address":"[::1]:47001"}"#, .pairJoin(code: "C", address: "[::1]:47001", replace: false, single: false)),
        (.pairJoin, #"{"code":"C"}"#, .pairJoin(code: "C", address: nil, replace: false, single: false)),
        (.pairJoin, #"{"code":"C","replace":true}"#, .pairJoin(code: "C", address: nil, replace: true, single: false)),
        (.pairJoin, #"{"code":"C","single":true}"#, .pairJoin(code: "C", address: nil, replace: false, single: true)),
        (.unpair, #"{"deviceID":"ABC"}"#, .unpair(deviceID: "ABC")),
        (.ping, #"{"deviceID":"ABC"}"#, .ping(deviceID: "ABC", count: 10)),
        (.ping, #"{"deviceID":"ABC","count":200}"#, .ping(deviceID: "ABC", count: 200)),
        (.inboxAck, #"{"ids":[1,9223372036854775807]}"#, .inboxAck(ids: [1, Int64.max])),
        (.queueCancel, #"{"id":42}"#, .queueCancel(id: 42)),
        (.queue, "{}", .queue),
        (.queue, "", .queue),
        (.sessions, "{}", .sessions(featureID: nil)),
        (.sessions, #"{"featureID":"demo"}"#, .sessions(featureID: "demo")),
        (.status, #"{"verbose":true}"#, .status),
    ])
    func wellFormedRequestsParse(operation: LocalAPIOperation, json: String, expected: LocalAPIRequest) throws {
        #expect(try LocalAPIRequest.parse(.request(operation, id: 1, json: json)) == expected)
    }

    @Test(arguments: [LocalAPIOperation.status, .peers, .queue])
    func aBodyThatIsNotAJSONObjectIsABadRequestNamingTheOperation(operation: LocalAPIOperation) {
        do {
            _ = try LocalAPIRequest.parse(.request(operation, id: 1, json: "[1,2]"))
            Issue.record("\(operation.name) accepted a JSON array as its body")
        } catch {
            #expect(error.body.code == "bad-request")
            #expect(error.body.message == "\(operation.name): the body must be empty or a JSON object")
            #expect(error.closesConnection)
        }
    }

    @Test(arguments: [
        (LocalAPIOperation.status, "{not json", "bad-request", true),
        (.status, "[]", "bad-request", true),
        (.status, "5", "bad-request", true),
        (.peers, #""x""#, "bad-request", true),
        (.queue, "null", "bad-request", true),
        (.queue, "[{}]", "bad-request", true),
        (.queue, "{", "bad-request", true),
        (.pairWait, "{}", "bad-request", true),
        (.pairJoin, #"{"code":"C","address":5}"#, "bad-request", true),
        (.pairJoin, #"{"code":"C","replace":"yes"}"#, "bad-request", true),
        (.ping, #"{"deviceID":"A","count":0}"#, "invalid-argument", false),
        (.ping, #"{"deviceID":"  "}"#, "invalid-argument", false),
        (.pairCreate, #"{"validFor":-1}"#, "invalid-argument", false),
        (LocalAPIOperation(rawValue: 0x0077), "{}", "unknown-operation", false),
        (LocalAPIOperation(rawValue: 0x0F00), "{}", "unknown-operation", false),
        (LocalAPIOperation(rawValue: 0x0100), #"{"features":[]}"#, "invalid-argument", false),
        (LocalAPIOperation(rawValue: 0x0100), "{}", "bad-request", true),
        // Item ids are u64 on the wire and SQLite rowids in the store: anything else is refused
        // as out of range, and the connection stays open.
        (.inboxAck, #"{"ids":[-1]}"#, "invalid-argument", false),
        (.inboxAck, #"{"ids":[3,-9223372036854775808]}"#, "invalid-argument", false),
        (.inboxAck, #"{"ids":[9223372036854775808]}"#, "invalid-argument", false),
        (.inboxAck, #"{"ids":[18446744073709551616]}"#, "invalid-argument", false),
        (.inboxAck, #"{"ids":[1.5]}"#, "invalid-argument", false),
        (.inboxAck, #"{"ids":["1"]}"#, "bad-request", true),
        (.inboxAck, #"{"ids":[true]}"#, "bad-request", true),
        (.queueCancel, #"{"id":-1}"#, "invalid-argument", false),
        (.queueCancel, #"{"id":18446744073709551615}"#, "invalid-argument", false),
        (.queueCancel, #"{"id":1e300}"#, "invalid-argument", false),
        (.queueCancel, #"{"id":null}"#, "bad-request", true),
        (.queueCancel, #"{"ids":[1]}"#, "bad-request", true),
        // A feature filter follows the feature id rules of every other operation (before, an
        // empty or 300-byte one matched nothing and answered an empty list).
        (.sessions, #"{"featureID":""}"#, "invalid-argument", false),
        (.sessions, #"{"featureID":"\#(String(repeating: "f", count: 256))"}"#, "invalid-argument", false),
        (.anchorSet, #"{"sessionID":"0D1E2F30-4A5B-4C6D-8E9F-A0B1C2D3E4F5","featureID":"demo","revision":1,"anchor":{"startedAt":1e14,"accumulatedElapsedBeforeAnchor":0,"isPaused":false}}"#, "invalid-argument", false),
        (.anchorSet, #"{"sessionID":"0D1E2F30-4A5B-4C6D-8E9F-A0B1C2D3E4F5","featureID":"demo","revision":1,"anchor":{"startedAt":1,"accumulatedElapsedBeforeAnchor":-1,"isPaused":false}}"#, "invalid-argument", false),
    ])
    func badRequestsAreRejectedWithACode(operation: LocalAPIOperation, json: String, code: String, closes: Bool) {
        #expect {
            try LocalAPIRequest.parse(.request(operation, id: 1, json: json))
        } throws: { error in
            guard let rejection = error as? LocalAPIRequest.Rejection else { return false }
            return rejection.body.code == code && rejection.closesConnection == closes
        }
    }

    /// Binary bodies: mode, target and envelope are read from the frame as sent, and each way
    /// of cutting one short or spoiling it is a bad-request naming what is wrong.
    @Test func binaryBodiesAreReadFieldByFieldAndEachDefectIsNamed() throws {
        let encoded = try RouterFixtures.envelope("x", sequence: 1).1
        let target = Array("PEERDEV-7654321".utf8)
        func parse(_ operation: LocalAPIOperation, _ bytes: [UInt8]) throws -> LocalAPIRequest {
            try LocalAPIRequest.parse(LocalAPIFrame(kind: .request, operation: operation, flags: .binaryBody, requestID: 1,
                                                    body: ByteBuffer(bytes: bytes)))
        }
        guard case .send(let mode, let parsedTarget, _, let parsedEncoded) = try parse(.send, [5, UInt8(target.count)] + target + encoded) else {
            Issue.record("a send body did not parse as a send")
            return
        }
        #expect(mode == 5 && parsedTarget == "PEERDEV-7654321" && parsedEncoded == encoded)
        let defects: [(LocalAPIOperation, [UInt8], String)] = [
            (.send, [], "missing mode byte"),
            (.send, [1], "missing target length"),
            (.send, [1, 4, 0x41, 0x42], "target is truncated or not UTF-8"),
            (.send, [1, 2, 0xC3, 0x28] + encoded, "target is truncated or not UTF-8"),
            (.send, [1, 0] + encoded.dropLast(), "the envelope does not decode"),
            (.send, [1, 0], "the envelope does not decode"),
            (.snapshotPublish, [], "missing target length"),
            (.snapshotPublish, [0, 1, 2, 3], "the snapshot does not decode"),
        ]
        for (operation, bytes, message) in defects {
            do {
                _ = try parse(operation, bytes)
                Issue.record("\(operation.name) \(bytes.prefix(8)) was accepted")
            } catch let rejection as LocalAPIRequest.Rejection {
                #expect(rejection.body.code == "bad-request" && rejection.body.message.contains(message),
                        "\(operation.name) \(bytes.prefix(8)): \(rejection.body.message)")
            }
        }
    }

    /// An envelope or snapshot one byte over `maximumMessageBytes` is refused with
    /// invalid-argument (the connection stays); at the limit it is accepted. Before, anything
    /// within the 1 MiB body was taken, and the event frame that later handed it to an app (the
    /// sender's device ID and the inbox ID added) was over the 1 MiB a documented client accepts.
    @Test(arguments: [false, true])
    func aMessageOverTheEventFrameRoomIsAnInvalidArgument(snapshot: Bool) throws {
        func body(payload count: Int) throws -> [UInt8] {
            let text = String(repeating: "a", count: count)
            return snapshot ? [0] + (try RouterFixtures.snapshot(revision: 1, state: text).1)
                            : [2, 0] + (try RouterFixtures.envelope(text, sequence: 1).1)
        }
        // Metadata and length prefixes, measured at the size of interest (lengths are varints).
        let overhead = try body(payload: 1_000_000).count - (snapshot ? 1 : 2) - 1_000_000
        let operation: LocalAPIOperation = snapshot ? .snapshotPublish : .send
        func parse(_ bytes: [UInt8]) throws -> LocalAPIRequest {
            try LocalAPIRequest.parse(LocalAPIFrame(kind: .request, operation: operation, flags: .binaryBody, requestID: 1,
                                                    body: ByteBuffer(bytes: bytes)))
        }
        _ = try parse(try body(payload: LocalAPIWireFormat.maximumMessageBytes - overhead))
        do {
            _ = try parse(try body(payload: LocalAPIWireFormat.maximumMessageBytes - overhead + 1))
            Issue.record("a message over maximumMessageBytes was accepted")
        } catch let rejection as LocalAPIRequest.Rejection {
            #expect(rejection.body.code == "invalid-argument" && !rejection.closesConnection)
            #expect(rejection.body.message.contains("bytes an event frame can carry to an app"), "\(rejection.body.message)")
        }
    }

    @Test func aMissingFieldIsNamedButTheBodyIsNotEchoed() {
        #expect {
            try LocalAPIRequest.parse(.request(.pairWait, id: 1, json: #"{"cod":"SECRET-CODE"}"#))
        } throws: { error in
            guard let rejection = error as? LocalAPIRequest.Rejection else { return false }
            return rejection.body.message == "pair.wait: missing field 'code'" && !rejection.body.message.contains("SECRET")
        }
    }

    // MARK: - The connection handler on an embedded channel

    private func serverChannel() throws -> (EmbeddedChannel, LocalAPICounters) {
        try EmbeddedLocalAPIConnection.make()
    }

    private func wire(_ frame: LocalAPIFrame) -> ByteBuffer {
        var buffer = ByteBuffer()
        LocalAPIFrameEncoder.write(frame, to: &buffer)
        return buffer
    }

    private func readReply(_ channel: EmbeddedChannel) throws -> LocalAPIFrame? {
        guard var bytes = try channel.readOutbound(as: ByteBuffer.self) else { return nil }
        return try LocalAPIFrameDecoder.parse(&bytes)
    }

    enum MalformedInput: String, CaseIterable, Sendable {
        case garbageJSON, replyFromClient, badMagic, oversizedFrame

        var bytes: ByteBuffer {
            var buffer = ByteBuffer()
            switch self {
            case .garbageJSON:
                LocalAPIFrameEncoder.write(.request(.status, id: 5, json: "]]]"), to: &buffer)
            case .replyFromClient:
                LocalAPIFrameEncoder.write(LocalAPIFrame(kind: .reply, operation: .status, requestID: 6, body: ByteBuffer()), to: &buffer)
            case .badMagic:
                buffer.writeString("HELLO WORLD, HOW ARE YOU")
            case .oversizedFrame:
                LocalAPIFrameEncoder.write(.request(.status, id: 8, json: String(repeating: " ", count: 300)), to: &buffer)
            }
            return buffer
        }

        var expected: (code: String, requestID: UInt32) {
            switch self {
            case .garbageJSON: return ("bad-request", 5)
            case .replyFromClient: return ("unexpected-kind", 6)
            case .badMagic: return ("bad-magic", 0)
            case .oversizedFrame: return ("frame-too-large", 8)
            }
        }
    }

    @Test(arguments: MalformedInput.allCases)
    func malformedInputGetsAnErrorAndTheConnectionCloses(input: MalformedInput) throws {
        let (channel, counters) = try serverChannel()
        _ = try? channel.writeInbound(input.bytes)
        let reply = try #require(try readReply(channel))
        #expect(reply.errorBody?.code == input.expected.code)
        #expect(reply.requestID == input.expected.requestID)
        #expect(!channel.isActive)
        #expect(counters.value(.malformedInput) == 1)
    }

    @Test func anUnknownOperationGetsAnErrorButTheConnectionStaysOpen() throws {
        let (channel, _) = try serverChannel()
        try channel.writeInbound(wire(.request(LocalAPIOperation(rawValue: 0x0042), id: 11)))
        let reply = try #require(try readReply(channel))
        #expect(reply.errorBody?.code == "unknown-operation")
        #expect(reply.requestID == 11)
        #expect(reply.operation.rawValue == 0x0042)
        #expect(channel.isActive)
        _ = try channel.finish()
    }

    /// The hello body is built from a reply encoded once; it must be byte for byte what
    /// JSONEncoder gives for the full reply, for any uid and for an odd version string.
    @Test(arguments: [nil, 0, 1000, UInt32.max] as [UInt32?])
    func helloBodyIsTheEncodedReply(uid: UInt32?) throws {
        let dispatcher = LocalAPIDispatcher(controlPlane: FakeControlPlane(), defaultPairingLifetime: 60,
                                            maximumBodyLength: 12_345, daemonVersion: #"9.9 "q\" }"#)
        let expected = try LocalAPIJSON.encode(HelloReply(
            protocolVersion: Int(LocalAPIWireFormat.version), daemon: "meshd", daemonVersion: #"9.9 "q\" }"#,
            maximumBodyLength: 12_345, operations: LocalAPIOperation.controlOperations.map(\.name), uid: uid))
        let body = dispatcher.helloBody(uid: uid)
        #expect(Array(body.readableBytesView) == Array(expected.readableBytesView))
        let decoded = try LocalAPIJSON.decode(HelloReply.self, from: body, operation: .hello)
        #expect(decoded.uid == uid)
        #expect(decoded.maximumBodyLength == 12_345)
    }
}
