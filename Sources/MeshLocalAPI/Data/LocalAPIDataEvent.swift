import NIOCore

/// Any event frame of the data API, typed: how the daemon builds event frames and how a client
/// reads them, with one codec for both.
///
/// Binary events (`envelope`, `snapshot`, `snapshot.request`) travel with the `binaryBody` flag;
/// the others are JSON without it. A frame with the wrong flag, an unknown event code or a body
/// of the wrong shape is rejected with a `bad-request` `LocalAPIErrorBody`.
public enum LocalAPIDataEvent: Sendable, Equatable {
    /// 0x0180.
    case envelope(MeshEnvelopeEvent)
    /// 0x0181.
    case snapshot(MeshSnapshotEvent)
    /// 0x0182.
    case snapshotRequest(MeshSnapshotRequestEvent)
    /// 0x0183.
    case reachability(MeshReachabilityEvent)
    /// 0x0184.
    case anchor(MeshAnchorEvent)
    /// 0x0185.
    case session(MeshSessionEvent)
    /// 0x0186.
    case watermark(MeshWatermarkBody)
    /// 0x00F0: the daemon shed events for this connection.
    case eventsDropped(EventsDroppedEvent)

    /// The event's operation code.
    public var operation: LocalAPIOperation {
        switch self {
        case .envelope: .envelopeEvent
        case .snapshot: .snapshotEvent
        case .snapshotRequest: .snapshotRequestEvent
        case .reachability: .reachabilityEvent
        case .anchor: .anchorEvent
        case .session: .sessionEvent
        case .watermark: .watermarkEvent
        case .eventsDropped: .eventsDropped
        }
    }

    /// The event frame, carrying `requestID` (the attach request's id; 0 for `events.dropped`).
    public func frame(requestID: UInt32) throws(LocalAPIErrorBody) -> LocalAPIFrame {
        let body: ByteBuffer
        var flags: LocalAPIFrame.Flags = []
        switch self {
        case .envelope(let event): body = try event.encode(); flags = .binaryBody
        case .snapshot(let event): body = try event.encode(); flags = .binaryBody
        case .snapshotRequest(let event): body = try event.encode(); flags = .binaryBody
        case .reachability(let event): body = try Self.json(event)
        case .anchor(let event): body = try Self.json(event)
        case .session(let event): body = try Self.json(event)
        case .watermark(let event): body = try Self.json(event)
        case .eventsDropped(let event): body = try Self.json(event)
        }
        return LocalAPIFrame(kind: .event, operation: operation, flags: flags, requestID: requestID, body: body)
    }

    /// Reads an event frame.
    public static func decode(_ frame: LocalAPIFrame) throws(LocalAPIErrorBody) -> LocalAPIDataEvent {
        let op = frame.operation
        guard frame.kind == .event else {
            throw LocalAPIDataError.badRequest(op, "expected an event frame, got kind \(frame.kind.rawValue)")
        }
        let binary = op == .envelopeEvent || op == .snapshotEvent || op == .snapshotRequestEvent
        let known = binary || LocalAPIOperation.dataEvents.contains(op) || op == .eventsDropped
        guard known else {
            throw LocalAPIDataError.badRequest(op, "unknown event code 0x\(String(op.rawValue, radix: 16))")
        }
        guard frame.flags.contains(.binaryBody) == binary else {
            throw LocalAPIDataError.badRequest(op, binary ? "this event must have a binary body" : "this event must have a JSON body")
        }
        switch op {
        case .envelopeEvent: return .envelope(try MeshEnvelopeEvent.decode(frame.body))
        case .snapshotEvent: return .snapshot(try MeshSnapshotEvent.decode(frame.body))
        case .snapshotRequestEvent: return .snapshotRequest(try MeshSnapshotRequestEvent.decode(frame.body))
        case .reachabilityEvent: return .reachability(try LocalAPIJSON.decode(MeshReachabilityEvent.self, from: frame.body, operation: op))
        case .anchorEvent: return .anchor(try LocalAPIJSON.decode(MeshAnchorEvent.self, from: frame.body, operation: op))
        case .sessionEvent: return .session(try LocalAPIJSON.decode(MeshSessionEvent.self, from: frame.body, operation: op))
        case .watermarkEvent: return .watermark(try LocalAPIJSON.decode(MeshWatermarkBody.self, from: frame.body, operation: op))
        default: return .eventsDropped(try LocalAPIJSON.decode(EventsDroppedEvent.self, from: frame.body, operation: op))
        }
    }

    private static func json(_ value: some Encodable) throws(LocalAPIErrorBody) -> ByteBuffer {
        do {
            return try LocalAPIJSON.encode(value)
        } catch {
            throw LocalAPIErrorBody(code: LocalAPIErrorBody.Code.internalError, message: "cannot encode an event: \(error)")
        }
    }
}
