import Foundation
import MeshLocalAPI
import NIOCore
import SessionMesh

/// Answers the data operations the way the contract (DATA-API.md) says a daemon does, with a
/// configurable inbound slot and extra frames after an attach reply.
struct StandardResponder: Sendable {
    var latest: SnapshotLatestReply?
    var afterAttach: @Sendable (UInt32) -> [LocalAPIFrame] = { _ in [] }

    func callAsFunction(_ request: LocalAPIFrame) -> [LocalAPIFrame] {
        switch request.operation {
        case .attach:
            let reply = AttachReply(attachmentID: 1, localDeviceID: "LOCALDEV-1234567",
                                    peers: [AttachedPeer(deviceID: "PEERDEV-7654321", name: "peer", reachable: true)])
            return [.reply(to: request, reply)] + afterAttach(request.requestID)
        case .send:
            guard let send = try? SendRequest.decode(request.body) else { return [.error(to: request, code: "bad-request")] }
            return [.reply(to: request, SendReply(eventID: send.envelope.metadata.eventID, outcome: .queued, peers: 1))]
        case .snapshotPublish:
            guard let publish = try? SnapshotPublishRequest.decode(request.body) else { return [.error(to: request, code: "bad-request")] }
            return [.reply(to: request, SnapshotPublishReply(revision: publish.snapshot.revision, stored: true))]
        case .snapshotLatest:
            guard let latest, let body = try? latest.encode() else { return [.error(to: request, code: LocalAPIDataError.notFound)] }
            return [LocalAPIFrame(kind: .reply, operation: request.operation, flags: .binaryBody, requestID: request.requestID, body: body)]
        case .inboxAck:
            let ack = (try? LocalAPIJSON.decode(InboxAckRequest.self, from: request.body, operation: .inboxAck))?.ids.count ?? 0
            return [.reply(to: request, InboxAckReply(acknowledged: ack))]
        default:
            return [.reply(to: request, EmptyBody())]
        }
    }
}

enum Fixtures {
    static func envelope(sequence: UInt64, feature: String = "demo", session: UUID = UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!) -> AnySessionSyncEnvelope {
        AnySessionSyncEnvelope(
            metadata: SessionSyncMetadata(sessionID: session, featureID: feature, sourcePeerID: "app-a", eventID: UUID(),
                                          sequence: sequence, causalTimestamp: Date(timeIntervalSince1970: 1_763_768_400), payloadType: "text"),
            payload: Data("message \(sequence)".utf8))
    }

    static func snapshot(revision: UInt64, feature: String = "demo") -> AnySessionSyncSnapshot {
        AnySessionSyncSnapshot(metadata: envelope(sequence: revision, feature: feature).metadata, revision: revision,
                               state: Data("state \(revision)".utf8))
    }
}
