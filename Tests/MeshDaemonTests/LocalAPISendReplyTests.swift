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

    @Test("event IDs in lower case read the same")
    func lowerCaseEventIDs() {
        let eventID = UUID()
        let body = #"{"eventID":"\#(eventID.uuidString.lowercased())","outcome":"queued","peers":2}"#
        #expect(MeshSendReply(compactBody: ByteBuffer(string: body)) == MeshSendReply(eventID: eventID, outcome: .queued, peers: 2))
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
