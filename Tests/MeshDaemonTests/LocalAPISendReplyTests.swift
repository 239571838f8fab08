import Foundation
import MeshLocalAPI
import NIOCore
import Testing
@testable import MeshDaemon

/// The `send` reply meshd writes without a JSON encoder must be exactly what the encoder would
/// write, and clients must read it both ways.
@Suite("Local API send reply")
struct LocalAPISendReplyTests {
    @Test("the compact send reply is byte for byte the JSON encoder's", arguments: ["sent", "queued", "pending"])
    func compactReplyMatchesTheEncoder(outcome: String) throws {
        let eventID = UUID()
        for peers in [0, 1, 7, 12345] {
            let compact = LocalAPIDispatcher.sendReplyBody(eventID: eventID, outcome: DeliverySendOutcome(outcome: outcome, peers: peers))
            let reply = MeshSendReply(eventID: eventID, outcome: try #require(MeshSendReply.Outcome(rawValue: outcome)), peers: peers)
            let encoded = try LocalAPIJSON.encode(reply)
            #expect(Array(compact.readableBytesView) == Array(encoded.readableBytesView))
            #expect(MeshSendReply(compactBody: compact) == reply)
        }
    }

    @Test("the reply written in place is as long as it says, for any outcome and peer count", arguments: ["sent", "queued", "pending"])
    func bodyLengthIsExact(outcome: String) {
        let eventID = UUID()
        for peers in [0, 1, 9, 10, 99, 100, 12345, Int(Int32.max), Int.max] {
            let reply = LocalAPIDispatcher.SendReply(eventID: eventID, outcome: DeliverySendOutcome(outcome: outcome, peers: peers))
            var buffer = ByteBuffer(string: "frame header")
            let before = buffer.writerIndex
            reply.write(to: &buffer)
            #expect(buffer.writerIndex - before == reply.bodyLength, "peers \(peers)")
            #expect(Array(buffer.readableBytesView.dropFirst(before)) == Array(reply.body.readableBytesView))
        }
    }

    @Test("event IDs in lower case read the same")
    func lowerCaseEventIDs() {
        let eventID = UUID()
        let body = #"{"eventID":"\#(eventID.uuidString.lowercased())","outcome":"queued","peers":2}"#
        #expect(MeshSendReply(compactBody: ByteBuffer(string: body)) == MeshSendReply(eventID: eventID, outcome: .queued, peers: 2))
    }

    @Test("every byte value in every place of the event ID: hex digits read as UUID(uuidString:) reads them, any other byte is refused")
    func everyByteInEveryPlace() {
        let eventID = UUID()
        let text = Array(eventID.uuidString.utf8)
        for place in 0..<36 {
            for byte in UInt8.min...UInt8.max {
                var changed = text
                changed[place] = byte
                let id = String(decoding: changed, as: UTF8.self)
                let body = Array(#"{"eventID":""#.utf8) + changed + Array(#"","outcome":"sent","peers":1}"#.utf8)
                let parsed = MeshSendReply(compactBody: ByteBuffer(bytes: body))
                // Valid only with a hyphen in the hyphens' places and a hex digit everywhere else;
                // then it reads as Foundation reads it. (Foundation is no reference for invalid
                // text: it reads a tab where a digit should be as a 9.)
                let isHex = (0x30...0x39).contains(byte) || (0x41...0x46).contains(byte) || (0x61...0x66).contains(byte)
                let valid = [8, 13, 18, 23].contains(place) ? byte == UInt8(ascii: "-") : isHex
                let expected = valid ? UUID(uuidString: id).map { MeshSendReply(eventID: $0, outcome: .sent, peers: 1) } : nil
                #expect(!valid || expected != nil)
                if parsed != expected {
                    Issue.record("byte \(byte) at \(place): \(String(describing: parsed)) instead of \(String(describing: expected))")
                    return
                }
            }
        }
    }

    @Test("other layouts of a send reply are left to the JSON decoder")
    func otherLayoutsAreNotReadCompactly() {
        let eventID = UUID().uuidString
        let bodies = [
            #"{"eventID": "\#(eventID)", "outcome": "sent", "peers": 1}"#,
            #"{"outcome":"sent","eventID":"\#(eventID)","peers":1}"#,
            #"{"eventID":"\#(eventID)","outcome":"sent","peers":1,"extra":true}"#,
            #"{"eventID":"\#(eventID)","outcome":"lost","peers":1}"#,
            #"{"eventID":"not-a-uuid-not-a-uuid-not-a-uuid-xxxx","outcome":"sent","peers":1}"#,
            #"{"eventID":"0123456789abcdef0123456789abcdef0123","outcome":"sent","peers":1}"#,
            #"{"eventID":"0123456-89ab-cdef-0123-456789abcdef0","outcome":"sent","peers":1}"#,
            #"{"eventID":"\#(eventID)","outcome":"sent","peers":}"#,
            #"{"eventID":"\#(eventID)""#,
            "",
        ]
        for body in bodies {
            #expect(MeshSendReply(compactBody: ByteBuffer(string: body)) == nil, "\(body)")
        }
    }
}
