import Foundation
import MeshLocalAPI
import NIOCore
import SessionMesh

extension LocalAPIRequest {
    /// Reads a data operation (docs/LOCAL-API.md §9). Binary bodies: `send`, `snapshot.publish`; the rest JSON.
    static func parseData(_ frame: LocalAPIFrame) throws(Rejection) -> LocalAPIRequest {
        let operation = frame.operation
        let wantsBinary = operation.takesBinaryBody
        guard frame.flags.contains(.binaryBody) == wantsBinary else {
            let name = operation.name
            throw Rejection(body: LocalAPIErrorBody(code: LocalAPIErrorBody.Code.unsupportedBody,
                                                    message: wantsBinary ? "\(name) takes a binary body; set the binary-body flag"
                                                                         : "\(name) takes a JSON body; clear the binary-body flag"),
                            closesConnection: false)
        }
        do {
            return wantsBinary ? try decodeBinary(operation, body: frame.body)
                               : try decodeDataJSON(operation, body: frame.body)
        } catch let body {
            throw Rejection(body: body, closesConnection: body.code == LocalAPIErrorBody.Code.badRequest)
        }
    }

    /// An envelope or snapshot longer than `maximumMessageBytes` would not fit the event frame
    /// that hands it to an app here or on a peer (a frame over the 1 MiB body limit, which
    /// clients written from docs/LOCAL-API.md refuse): refused now, while the sender can act.
    private static func checkLength(_ encoded: [UInt8], _ field: String, _ operation: LocalAPIOperation) throws(LocalAPIErrorBody) {
        guard encoded.count <= LocalAPIWireFormat.maximumMessageBytes else {
            throw LocalAPIDataError.invalidArgument(
                operation, "the \(field) is \(encoded.count) bytes, over the \(LocalAPIWireFormat.maximumMessageBytes) bytes an event frame can carry to an app; send a smaller payload")
        }
    }

    /// The body is read in place; only the envelope or snapshot is copied out (once), as the
    /// bytes that travel on.
    private static func decodeBinary(_ operation: LocalAPIOperation, body: ByteBuffer) throws(LocalAPIErrorBody) -> LocalAPIRequest {
        var body = body
        func string() throws(LocalAPIErrorBody) -> String {
            guard let length = body.readInteger(as: UInt8.self) else {
                throw LocalAPIDataError.badRequest(operation, "missing target length")
            }
            // Every paired device, the common case: no validation to pay for (≈ 700 instructions).
            if length == 0 { return "" }
            guard let bytes = body.readSlice(length: Int(length)),
                  let text = bytes.withUnsafeReadableBytes({ String(exactUTF8: $0) }) else {
                throw LocalAPIDataError.badRequest(operation, "target is truncated or not UTF-8")
            }
            return text
        }
        if operation == .send {
            guard let mode = body.readInteger(as: UInt8.self) else { throw LocalAPIDataError.badRequest(operation, "missing mode byte") }
            guard mode == 1 || mode == 2 || mode == 5 else {
                throw invalid("send: mode must be 1 (realtime), 2 (reliable) or 5 (acknowledgement); got \(mode)")
            }
            let target = try string()
            let encoded = body.readBytes(length: body.readableBytes) ?? []
            try checkLength(encoded, "envelope", operation)
            guard let metadata = try? SessionWireCodec.decodeEnvelopeMetadata(encoded) else {
                throw LocalAPIDataError.badRequest(operation, "the envelope does not decode (docs/ENCODING.md)")
            }
            try LocalAPIFeatureID.validate(metadata.featureID, operation: operation)
            return .send(mode: mode, target: target, metadata: metadata, encoded: encoded)
        }
        let target = try string()
        let encoded = body.readBytes(length: body.readableBytes) ?? []
        try checkLength(encoded, "snapshot", operation)
        guard let snapshot = try? SessionWireCodec.decodeSnapshot(encoded) else {
            throw LocalAPIDataError.badRequest(operation, "the snapshot does not decode (docs/ENCODING.md)")
        }
        try LocalAPIFeatureID.validate(snapshot.metadata.featureID, operation: operation)
        return .snapshotPublish(target: target, snapshot: snapshot, encoded: encoded)
    }

    private static func decodeDataJSON(_ operation: LocalAPIOperation, body: ByteBuffer) throws(LocalAPIErrorBody) -> LocalAPIRequest {
        switch operation {
        case .attach:
            let request = try LocalAPIJSON.decode(MeshAttachRequest.self, from: body, operation: operation)
            try request.validate()
            return .attach(features: request.features, sessionID: request.sessionID, app: request.app)
        case .snapshotRequest:
            let request = try LocalAPIJSON.decode(MeshSnapshotAskRequest.self, from: body, operation: operation)
            try LocalAPIFeatureID.validate(request.featureID, operation: operation)
            return .snapshotRequest(sessionID: request.sessionID, featureID: request.featureID, peer: request.peer)
        case .snapshotLatest:
            let request = try LocalAPIJSON.decode(MeshSnapshotLatestRequest.self, from: body, operation: operation)
            try LocalAPIFeatureID.validate(request.featureID, operation: operation)
            return .snapshotLatest(featureID: request.featureID, peer: request.peer, sessionID: request.sessionID)
        case .anchorSet:
            let request = try LocalAPIJSON.decode(MeshAnchorSetRequest.self, from: body, operation: operation)
            try LocalAPIFeatureID.validate(request.featureID, operation: operation)
            try request.anchor.validate(operation: operation)
            return .anchorSet(sessionID: request.sessionID, featureID: request.featureID, revision: request.revision,
                              anchor: request.anchor.anchor)
        case .sessionAnnounce:
            let request = try LocalAPIJSON.decode(MeshSessionAnnounceRequest.self, from: body, operation: operation)
            try LocalAPIFeatureID.validate(request.featureID, operation: operation)
            return .sessionAnnounce(sessionID: request.sessionID, featureID: request.featureID,
                                    owner: try nonEmpty(request.owner, "owner", operation),
                                    status: try nonEmpty(request.status, "status", operation))
        case .sessionClose:
            let request = try LocalAPIJSON.decode(MeshSessionCloseRequest.self, from: body, operation: operation)
            try LocalAPIFeatureID.validate(request.featureID, operation: operation)
            return .sessionClose(sessionID: request.sessionID, featureID: request.featureID)
        case .sessions:
            let featureID = try LocalAPIJSON.decode(MeshSessionsRequest.self, from: body, operation: operation).featureID
            if let featureID { try LocalAPIFeatureID.validate(featureID, operation: operation) }
            return .sessions(featureID: featureID)
        case .inboxAck:
            let request = try decodeIDs(MeshInboxAckRequest.self, key: "ids", body: body, operation: operation)
            try request.validate()
            return .inboxAck(ids: request.ids.map { Int64(truncatingIfNeeded: $0) })  // validate() keeps them ≤ Int64.max
        case .queue:
            try LocalAPIEmptyRequest.check(body, operation: operation)
            return .queue
        case .inbox:
            try LocalAPIEmptyRequest.check(body, operation: operation)
            return .inbox
        case .queueCancel:
            let request = try decodeIDs(MeshQueueCancelRequest.self, key: "id", body: body, operation: operation)
            try request.validate()
            return .queueCancel(id: Int64(truncatingIfNeeded: request.id))  // validate() keeps it ≤ Int64.max
        case .watermarkSet:
            let request = try LocalAPIJSON.decode(MeshWatermarkBody.self, from: body, operation: operation)
            try LocalAPIFeatureID.validate(request.featureID, operation: operation)
            return .watermarkSet(sessionID: request.sessionID, featureID: request.featureID,
                                 peer: try nonEmpty(request.peer, "peer", operation), sequence: request.sequence)
        default:
            throw LocalAPIErrorBody(code: LocalAPIErrorBody.Code.unknownOperation,
                                    message: "operation \(operation.name) is not implemented by this daemon")
        }
    }

    /// Decodes an `inbox.ack` or `queue.cancel` body. Item ids are `u64` on the wire (the
    /// envelope event's `inboxID`); a JSON number that does not fit one (negative, fractional,
    /// too large) fails the typed decoding, and is reported as `invalid-argument` rather than
    /// as malformed JSON, which would close the connection.
    private static func decodeIDs<Body: Decodable>(_ type: Body.Type, key: String, body: ByteBuffer,
                                                   operation: LocalAPIOperation) throws(LocalAPIErrorBody) -> Body {
        do {
            return try LocalAPIJSON.decode(Body.self, from: body, operation: operation)
        } catch let error {
            guard let object = try? JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any],
                  let value = object[key] else { throw error }
            let values = (value as? [Any]) ?? [value]
            guard !values.isEmpty, values.allSatisfy({ $0 is NSNumber && !($0 is Bool) }) else { throw error }
            throw LocalAPIItemID.outOfRange(key, operation: operation)
        }
    }
}

extension LocalAPIRequest {
    /// The features a data request touches (checked against the allow-list).
    var features: [String] {
        switch self {
        case .attach(let features, _, _): features
        case .send(_, _, let metadata, _): [metadata.featureID]
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
