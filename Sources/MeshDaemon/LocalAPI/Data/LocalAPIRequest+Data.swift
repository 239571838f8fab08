import Foundation
import MeshLocalAPI
import NIOCore
import SessionMesh

extension LocalAPIRequest {
    /// Reads a data operation (issue 5). Binary bodies: `send`, `snapshot.publish`; the rest JSON.
    static func parseData(_ frame: LocalAPIFrame) throws(Rejection) -> LocalAPIRequest {
        let operation = frame.operation
        let wantsBinary = LocalAPIDataOperation.binaryRequests.contains(operation)
        guard frame.flags.contains(.binaryBody) == wantsBinary else {
            let name = LocalAPIDataOperation.name(operation)
            throw Rejection(body: LocalAPIErrorBody(code: LocalAPIErrorBody.Code.unsupportedBody,
                                                    message: wantsBinary ? "\(name) takes a binary body; set the binary-body flag"
                                                                         : "\(name) takes a JSON body; clear the binary-body flag"),
                            closesConnection: false)
        }
        do {
            return wantsBinary ? try decodeBinary(operation, body: Array(frame.body.readableBytesView))
                               : try decodeDataJSON(operation, body: frame.body)
        } catch let body {
            throw Rejection(body: body, closesConnection: body.code == LocalAPIErrorBody.Code.badRequest)
        }
    }

    private static func decodeBinary(_ operation: LocalAPIOperation, body: [UInt8]) throws(LocalAPIErrorBody) -> LocalAPIRequest {
        var offset = 0
        func string() throws(LocalAPIErrorBody) -> String {
            guard offset < body.count else { throw badBinary(operation, "missing target length") }
            let length = Int(body[offset])
            offset += 1
            guard body.count - offset >= length,
                  let text = String(validating: body[offset..<(offset + length)], as: UTF8.self) else {
                throw badBinary(operation, "target is truncated or not UTF-8")
            }
            offset += length
            return text
        }
        if operation == LocalAPIDataOperation.send {
            guard body.count >= 1 else { throw badBinary(operation, "missing mode byte") }
            let mode = body[0]
            offset = 1
            guard [1, 2, 5].contains(mode) else {
                throw invalid("send: mode must be 1 (realtime), 2 (reliable) or 5 (acknowledgement); got \(mode)")
            }
            let target = try string()
            let encoded = Array(body[offset...])
            guard let envelope = try? SessionWireCodec.decodeEnvelope(encoded) else {
                throw badBinary(operation, "the envelope does not decode (docs/ENCODING.md)")
            }
            try checkFeature(envelope.metadata.featureID, operation)
            return .send(mode: mode, target: target, envelope: envelope, encoded: encoded)
        }
        let target = try string()
        let encoded = Array(body[offset...])
        guard let snapshot = try? SessionWireCodec.decodeSnapshot(encoded) else {
            throw badBinary(operation, "the snapshot does not decode (docs/ENCODING.md)")
        }
        try checkFeature(snapshot.metadata.featureID, operation)
        return .snapshotPublish(target: target, snapshot: snapshot, encoded: encoded)
    }

    private static func decodeDataJSON(_ operation: LocalAPIOperation, body: ByteBuffer) throws(LocalAPIErrorBody) -> LocalAPIRequest {
        switch operation {
        case LocalAPIDataOperation.attach:
            let request = try LocalAPIJSON.decode(DaemonAttachRequest.self, from: body, operation: operation)
            guard !request.features.isEmpty, request.features.count <= 64 else {
                throw invalid("attach: give 1 to 64 features")
            }
            for feature in request.features { try checkFeature(feature, operation) }
            return .attach(features: request.features, sessionID: request.sessionID, app: request.app)
        case LocalAPIDataOperation.snapshotRequest:
            let request = try LocalAPIJSON.decode(DaemonSnapshotRequestBody.self, from: body, operation: operation)
            try checkFeature(request.featureID, operation)
            return .snapshotRequest(sessionID: request.sessionID, featureID: request.featureID, peer: request.peer)
        case LocalAPIDataOperation.snapshotLatest:
            let request = try LocalAPIJSON.decode(DaemonSnapshotLatestRequest.self, from: body, operation: operation)
            try checkFeature(request.featureID, operation)
            return .snapshotLatest(featureID: request.featureID, peer: request.peer, sessionID: request.sessionID)
        case LocalAPIDataOperation.anchorSet:
            let request = try LocalAPIJSON.decode(DaemonAnchorSetRequest.self, from: body, operation: operation)
            try checkFeature(request.featureID, operation)
            let a = request.anchor
            let instants = [a.startedAt, a.accumulatedElapsedBeforeAnchor] + [a.pauseStartedAt, a.expectedEndAt, a.stepStartedAt].compactMap { $0 }
            guard instants.allSatisfy({ $0.isFinite && abs($0) < 1e13 }) else {
                throw invalid("anchor.set: every instant must be finite seconds since 1970")
            }
            func date(_ seconds: Double) -> Date { Date(timeIntervalSince1970: seconds) }
            let anchor = SessionTimerAnchor(startedAt: date(a.startedAt), accumulatedElapsedBeforeAnchor: a.accumulatedElapsedBeforeAnchor,
                                            pauseStartedAt: a.pauseStartedAt.map(date), isPaused: a.isPaused,
                                            expectedEndAt: a.expectedEndAt.map(date), stepStartedAt: a.stepStartedAt.map(date))
            return .anchorSet(sessionID: request.sessionID, featureID: request.featureID, revision: request.revision, anchor: anchor)
        case LocalAPIDataOperation.sessionAnnounce:
            let request = try LocalAPIJSON.decode(DaemonSessionAnnounceRequest.self, from: body, operation: operation)
            try checkFeature(request.featureID, operation)
            return .sessionAnnounce(sessionID: request.sessionID, featureID: request.featureID,
                                    owner: try nonEmpty(request.owner, "owner", operation),
                                    status: try nonEmpty(request.status, "status", operation))
        case LocalAPIDataOperation.sessionClose:
            let request = try LocalAPIJSON.decode(DaemonSessionCloseRequest.self, from: body, operation: operation)
            try checkFeature(request.featureID, operation)
            return .sessionClose(sessionID: request.sessionID, featureID: request.featureID)
        case LocalAPIDataOperation.sessions:
            return .sessions(featureID: try LocalAPIJSON.decode(DaemonSessionsRequest.self, from: body, operation: operation).featureID)
        case LocalAPIDataOperation.inboxAck:
            let request = try LocalAPIJSON.decode(DaemonInboxAckRequest.self, from: body, operation: operation)
            guard request.ids.count <= 10_000 else { throw invalid("inbox.ack: at most 10000 ids per request") }
            return .inboxAck(ids: request.ids)
        case LocalAPIDataOperation.queue:
            _ = try LocalAPIJSON.decode(EmptyBody.self, from: body, operation: operation)
            return .queue
        case LocalAPIDataOperation.queueCancel:
            return .queueCancel(id: try LocalAPIJSON.decode(DaemonQueueCancelRequest.self, from: body, operation: operation).id)
        case LocalAPIDataOperation.watermarkSet:
            let request = try LocalAPIJSON.decode(DaemonWatermarkBody.self, from: body, operation: operation)
            try checkFeature(request.featureID, operation)
            return .watermarkSet(sessionID: request.sessionID, featureID: request.featureID,
                                 peer: try nonEmpty(request.peer, "peer", operation), sequence: request.sequence)
        default:
            throw LocalAPIErrorBody(code: LocalAPIErrorBody.Code.unknownOperation,
                                    message: "operation \(operation.name) is not implemented by this daemon")
        }
    }

    /// Feature IDs: 1 to 255 bytes of UTF-8.
    private static func checkFeature(_ feature: String, _ operation: LocalAPIOperation) throws(LocalAPIErrorBody) {
        guard !feature.isEmpty, feature.utf8.count <= 255 else {
            throw invalid("\(LocalAPIDataOperation.name(operation)): featureID must be 1 to 255 bytes")
        }
    }

    private static func badBinary(_ operation: LocalAPIOperation, _ detail: String) -> LocalAPIErrorBody {
        LocalAPIErrorBody(code: LocalAPIErrorBody.Code.badRequest, message: "\(LocalAPIDataOperation.name(operation)): \(detail)")
    }
}

extension LocalAPIRequest {
    /// The features a data request touches (checked against the allow-list).
    var features: [String] {
        switch self {
        case .attach(let features, _, _): features
        case .send(_, _, let envelope, _): [envelope.metadata.featureID]
        case .snapshotPublish(_, let snapshot, _): [snapshot.metadata.featureID]
        case .snapshotRequest(_, let featureID, _), .snapshotLatest(let featureID, _, _),
             .anchorSet(_, let featureID, _, _), .sessionAnnounce(_, let featureID, _, _),
             .sessionClose(_, let featureID), .watermarkSet(_, let featureID, _, _):
            [featureID]
        case .sessions(let featureID): featureID.map { [$0] } ?? []
        default: []
        }
    }
}
