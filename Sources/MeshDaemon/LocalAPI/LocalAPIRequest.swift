import Foundation
import MeshLocalAPI
import NIOCore
import SessionMesh

/// A control request read from a frame and checked, ready to perform.
public enum LocalAPIRequest: Sendable, Equatable {
    /// `hello`.
    case hello(HelloRequest)
    /// `status`.
    case status
    /// `peers`.
    case peers
    /// `pair.create`, with the lifetime asked for (nil: the daemon's default) and whether an
    /// already paired device may pair again.
    case pairCreate(validFor: Double?, replace: Bool, single: Bool)
    /// `pair.wait`.
    case pairWait(code: String)
    /// `pair.cancel`.
    case pairCancel(code: String)
    /// `pair.join`.
    case pairJoin(code: String, address: String?, replace: Bool, single: Bool)
    /// `unpair`.
    case unpair(deviceID: String)
    /// `ping`.
    case ping(deviceID: String, count: Int)
    /// `attach` (data operations from here on; docs/LOCAL-API.md § data operations).
    case attach(features: [String], sessionID: UUID?, app: String?)
    /// `send`: mode byte, target ("" = all), the envelope's metadata and its encoded bytes (the
    /// daemon forwards those; it never needs the payload apart, so it is not copied out).
    case send(mode: UInt8, target: String, metadata: SessionSyncMetadata, encoded: [UInt8])
    /// `snapshot.publish`: target ("" = all), the snapshot and its encoded bytes.
    case snapshotPublish(target: String, snapshot: AnySessionSyncSnapshot, encoded: [UInt8])
    /// `snapshot.request`.
    case snapshotRequest(sessionID: UUID, featureID: String, peer: String?)
    /// `snapshot.latest`.
    case snapshotLatest(featureID: String, peer: String?, sessionID: UUID?)
    /// `anchor.set`.
    case anchorSet(sessionID: UUID, featureID: String, revision: UInt64, anchor: SessionTimerAnchor)
    /// `session.announce`.
    case sessionAnnounce(sessionID: UUID, featureID: String, owner: String, status: String)
    /// `session.close`.
    case sessionClose(sessionID: UUID, featureID: String)
    /// `sessions`.
    case sessions(featureID: String?)
    /// `inbox.ack`.
    case inboxAck(ids: [Int64])
    /// `queue`.
    case queue
    /// `inbox`.
    case inbox
    /// `queue.cancel`.
    case queueCancel(id: Int64)
    /// `watermark.set`.
    case watermarkSet(sessionID: UUID, featureID: String, peer: String, sequence: UInt64)

    /// Why a request frame was refused, and whether the connection must close.
    public struct Rejection: Error, Sendable, Equatable {
        /// What to send back.
        public var body: LocalAPIErrorBody
        /// True when the input shows the client is broken (bad JSON, wrong kind); false when
        /// it is a well-formed request the daemon does not serve (unknown op, bad argument).
        public var closesConnection: Bool
    }

    /// Reads a request frame. Throws a `Rejection` for anything the daemon will not perform.
    public static func parse(_ frame: LocalAPIFrame) throws(Rejection) -> LocalAPIRequest {
        guard frame.kind == .request else {
            throw Rejection(body: LocalAPIErrorBody(code: LocalAPIErrorBody.Code.unexpectedKind,
                                                    message: "a client may only send request frames (kind 1); got kind \(frame.kind.rawValue)"),
                            closesConnection: true)
        }
        let operation = frame.operation
        if LocalAPIOperation.dataOperations.contains(operation) {
            return try parseData(frame)
        }
        guard LocalAPIOperation.controlOperations.contains(operation) else {
            throw Rejection(body: LocalAPIErrorBody(code: LocalAPIErrorBody.Code.unknownOperation,
                                                    message: "operation \(operation.name) is not implemented by this daemon; see the hello reply for the list"),
                            closesConnection: false)
        }
        guard !frame.flags.contains(.binaryBody) else {
            throw Rejection(body: LocalAPIErrorBody(code: LocalAPIErrorBody.Code.unsupportedBody,
                                                    message: "\(operation.name) takes a JSON body; clear the binary-body flag"),
                            closesConnection: false)
        }
        do {
            return try decode(operation, body: frame.body)
        } catch let body {
            let fatal = body.code == LocalAPIErrorBody.Code.badRequest
            throw Rejection(body: body, closesConnection: fatal)
        }
    }

    private static func decode(_ operation: LocalAPIOperation, body: ByteBuffer) throws(LocalAPIErrorBody) -> LocalAPIRequest {
        switch operation {
        case .hello:
            return .hello(try LocalAPIJSON.decode(HelloRequest.self, from: body, operation: operation))
        case .status:
            try LocalAPIEmptyRequest.check(body, operation: operation)
            return .status
        case .peers:
            try LocalAPIEmptyRequest.check(body, operation: operation)
            return .peers
        case .pairCreate:
            let request = try LocalAPIJSON.decode(PairCreateRequest.self, from: body, operation: operation)
            if let seconds = request.validFor, !(seconds.isFinite && seconds >= 1 && seconds <= 3600) {
                throw invalid("pair.create: validFor must be between 1 and 3600 seconds")
            }
            return .pairCreate(validFor: request.validFor, replace: request.replace ?? false, single: request.single ?? false)
        case .pairWait:
            return .pairWait(code: try nonEmpty(LocalAPIJSON.decode(PairCodeRequest.self, from: body, operation: operation).code, "code", operation))
        case .pairCancel:
            return .pairCancel(code: try nonEmpty(LocalAPIJSON.decode(PairCodeRequest.self, from: body, operation: operation).code, "code", operation))
        case .pairJoin:
            let request = try LocalAPIJSON.decode(PairJoinRequest.self, from: body, operation: operation)
            var address: String?
            if let given = request.address { address = try nonEmpty(given, "address", operation) }
            return .pairJoin(code: try nonEmpty(request.code, "code", operation), address: address,
                             replace: request.replace ?? false, single: request.single ?? false)
        case .unpair:
            let request = try LocalAPIJSON.decode(UnpairRequest.self, from: body, operation: operation)
            return .unpair(deviceID: try nonEmpty(request.deviceID, "deviceID", operation))
        case .ping:
            let request = try LocalAPIJSON.decode(PingRequest.self, from: body, operation: operation)
            let count = request.count ?? PingRequest.defaultCount
            guard PingRequest.countRange.contains(count) else {
                throw invalid("ping: count must be between \(PingRequest.countRange.lowerBound) and \(PingRequest.countRange.upperBound)")
            }
            return .ping(deviceID: try nonEmpty(request.deviceID, "deviceID", operation), count: count)
        default:
            throw LocalAPIErrorBody(code: LocalAPIErrorBody.Code.unknownOperation,
                                    message: "operation \(operation.name) is not implemented by this daemon")
        }
    }

    /// The operation of a request that needs the control role (`ControlRole`); nil for others.
    var controlRoleOperation: LocalAPIOperation? {
        switch self {
        case .pairCreate: return .pairCreate
        case .pairWait: return .pairWait
        case .pairCancel: return .pairCancel
        case .pairJoin: return .pairJoin
        case .unpair: return .unpair
        default: return nil
        }
    }

    static func invalid(_ message: String) -> LocalAPIErrorBody {
        LocalAPIErrorBody(code: LocalAPIErrorBody.Code.invalidArgument, message: message)
    }

    static func nonEmpty(_ value: String, _ field: String, _ operation: LocalAPIOperation) throws(LocalAPIErrorBody) -> String {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty, trimmed.utf8.count <= 256 else {
            throw invalid("\(operation.name): \(field) must be 1 to 256 characters")
        }
        return trimmed
    }
}
