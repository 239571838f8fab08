import Foundation
@testable import MeshDaemon
import MeshLocalAPI
import NIOCore
import Testing

/// `bad-request` messages name the field as a JSON reader writes it, never with Swift's names
/// for coding keys (`Index 0`, `CodingKeys(…)`), and never echo the body.
@Suite("Local API error messages")
struct LocalAPIErrorMessageTests {
    static let session = "6F9619FF-8B86-D011-B42D-00C04FC964FF"

    @Test(arguments: [
        (LocalAPIOperation.inboxAck, #"{"ids":[1,"2"]}"#, "inbox.ack: field 'ids[1]' has the wrong type"),
        (.attach, #"{"features":["a",5]}"#, "attach: field 'features[1]' has the wrong type"),
        (.anchorSet, #"{"sessionID":"\#(session)","featureID":"f","revision":1,"anchor":{"accumulatedElapsedBeforeAnchor":0,"isPaused":false}}"#,
         "anchor.set: missing field 'anchor.startedAt'"),
        (.anchorSet, #"{"sessionID":"\#(session)","featureID":"f","revision":1,"anchor":{"startedAt":"x","accumulatedElapsedBeforeAnchor":0,"isPaused":false}}"#,
         "anchor.set: field 'anchor.startedAt' has the wrong type"),
        (.snapshotRequest, #"{"sessionID":"not-a-uuid","featureID":"f"}"#, "snapshot.request: field 'sessionID' has an invalid value"),
        (.pairWait, #"{"code":null}"#, "pair.wait: field 'code' is null"),
        (.pairWait, "{}", "pair.wait: missing field 'code'"),
    ])
    func aBadRequestNamesTheFieldAsJSONWritesIt(operation: LocalAPIOperation, json: String, message: String) {
        do {
            _ = try LocalAPIRequest.parse(.request(operation, id: 1, json: json))
            Issue.record("\(operation.name) accepted \(json)")
        } catch {
            #expect(error.body.code == "bad-request")
            #expect(error.body.message == message)
            #expect(!error.body.message.contains("Index "))
            #expect(!error.body.message.contains("CodingKeys"))
        }
    }
}
