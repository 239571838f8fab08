import NIOCore
import SessionMesh

/// `send` (0x0101) request body, binary:
///
/// ```
/// +---------+------------------+---------------------------------+
/// | mode u8 | target str       | envelope (SessionWireCodec)     |
/// +---------+------------------+---------------------------------+
/// ```
///
/// `mode`: 1 realtime, 2 reliable, 5 acknowledgement (`LocalAPIDeliveryMode`); any other byte
/// (3 and 4 included: snapshots go through `snapshot.publish` / `snapshot.request`) is refused
/// with `invalid-argument`. `target`: a full or short device ID (or a unique prefix), or empty
/// (or `all`) for every paired device.
public struct MeshSendRequest: Sendable, Equatable {
    /// How to deliver.
    public var mode: SessionDeliveryMode
    /// Device ID of the one peer to send to, or empty for all.
    public var target: String
    /// What to send; its metadata travels unchanged.
    public var envelope: AnySessionSyncEnvelope

    /// Creates a request.
    public init(mode: SessionDeliveryMode, target: String = "", envelope: AnySessionSyncEnvelope) {
        self.mode = mode
        self.target = target
        self.envelope = envelope
    }

    /// The binary body; `invalid-argument` when the envelope is over
    /// `LocalAPIWireFormat.maximumMessageBytes` or the body over the 1 MiB one frame carries.
    public func encode() throws(LocalAPIErrorBody) -> ByteBuffer {
        var writer = LocalAPIBinaryWriter(operation: .send, capacity: 128 + envelope.payload.count)
        writer.u8(LocalAPIDeliveryMode.byte(mode))
        try writer.string(target, field: "target")
        let messageStart = writer.buffer.readableBytes
        try writer.message(.envelope(envelope), field: "envelope")
        return try writer.requestBody(messageStart: messageStart,
                                      contents: "a \(envelope.payload.count)-byte payload and the envelope's other fields")
    }

    /// Reads a binary body; throws `bad-request` naming the field that is wrong.
    public static func decode(_ body: ByteBuffer) throws(LocalAPIErrorBody) -> MeshSendRequest {
        var reader = LocalAPIBinaryReader(body, operation: .send)
        let raw = try reader.u8("mode")
        guard let mode = LocalAPIDeliveryMode.mode(raw),
              mode == .realtimeBestEffort || mode == .reliableEventually || mode == .acknowledgement else {
            throw LocalAPIDataError.invalidArgument(.send, "mode must be 1 (realtime), 2 (reliable) or 5 (acknowledgement); got \(raw)")
        }
        let target = try reader.string("target")
        return MeshSendRequest(mode: mode, target: target, envelope: try reader.envelope())
    }
}
