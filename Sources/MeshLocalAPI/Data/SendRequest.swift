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
/// `mode`: 1 realtime, 2 reliable, 5 acknowledgement (`LocalAPIDeliveryMode`; 3 and 4 are
/// refused: snapshots go through `snapshot.publish` / `snapshot.request`). `target`: a full or
/// short device ID, or empty for every paired device.
public struct SendRequest: Sendable, Equatable {
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

    /// The binary body.
    public func encode() throws(LocalAPIErrorBody) -> ByteBuffer {
        var writer = LocalAPIBinaryWriter(operation: .send, capacity: 128 + envelope.payload.count)
        writer.u8(LocalAPIDeliveryMode.byte(mode))
        try writer.string(target, field: "target")
        try writer.message(.envelope(envelope), field: "envelope")
        return writer.buffer
    }

    /// Reads a binary body; throws `bad-request` naming the field that is wrong.
    public static func decode(_ body: ByteBuffer) throws(LocalAPIErrorBody) -> SendRequest {
        var reader = LocalAPIBinaryReader(body, operation: .send)
        let mode = try LocalAPIDeliveryMode.read(&reader)
        guard mode == .realtimeBestEffort || mode == .reliableEventually || mode == .acknowledgement else {
            throw LocalAPIDataError.badRequest(.send, "mode \(LocalAPIDeliveryMode.byte(mode)) is not sent with 'send'; use snapshot.publish or snapshot.request")
        }
        let target = try reader.string("target")
        return SendRequest(mode: mode, target: target, envelope: try reader.envelope())
    }
}
