import NIOCore
import SessionMesh

/// `envelope` (0x0180) event body, binary:
///
/// ```
/// +----------+-------------+----------+---------+------------------------------+
/// | flags u8 | inboxID u64 | from str | mode u8 | envelope (SessionWireCodec)  |
/// +----------+-------------+----------+---------+------------------------------+
/// ```
///
/// `flags` bit 0: redelivery (the item was handed to an app before and not acked); other bits
/// must be 0. `inboxID` 0 means nothing to ack (realtime); otherwise the item stays in the
/// daemon's inbox until `inbox.ack` names it. `from`: the sending peer's full device ID.
public struct EnvelopeEvent: Sendable, Equatable {
    /// The item was delivered to an app before and not acknowledged.
    public var isRedelivery: Bool
    /// The inbox id to pass to `inbox.ack`, or 0 when there is nothing to ack.
    public var inboxID: UInt64
    /// Full device ID of the sender.
    public var from: String
    /// The mode it was sent with.
    public var mode: SessionDeliveryMode
    /// The envelope, unchanged.
    public var envelope: AnySessionSyncEnvelope

    /// Creates an event.
    public init(isRedelivery: Bool = false, inboxID: UInt64, from: String, mode: SessionDeliveryMode,
                envelope: AnySessionSyncEnvelope) {
        self.isRedelivery = isRedelivery
        self.inboxID = inboxID
        self.from = from
        self.mode = mode
        self.envelope = envelope
    }

    /// The binary body.
    public func encode() throws(LocalAPIErrorBody) -> ByteBuffer {
        var writer = LocalAPIBinaryWriter(operation: .envelopeEvent, capacity: 160 + envelope.payload.count)
        writer.u8(isRedelivery ? 1 : 0)
        writer.u64(inboxID)
        try writer.string(from, field: "from")
        writer.u8(LocalAPIDeliveryMode.byte(mode))
        try writer.message(.envelope(envelope), field: "envelope")
        return writer.buffer
    }

    /// Reads a binary body; throws `bad-request` naming the field that is wrong.
    public static func decode(_ body: ByteBuffer) throws(LocalAPIErrorBody) -> EnvelopeEvent {
        var reader = LocalAPIBinaryReader(body, operation: .envelopeEvent)
        let flags = try reader.u8("flags")
        guard flags & ~1 == 0 else {
            throw LocalAPIDataError.badRequest(.envelopeEvent, "reserved flag bits 0x\(String(flags & ~1, radix: 16)) are set")
        }
        let inboxID = try reader.u64("inboxID")
        let from = try reader.string("from")
        let mode = try LocalAPIDeliveryMode.read(&reader)
        return EnvelopeEvent(isRedelivery: flags & 1 != 0, inboxID: inboxID, from: from, mode: mode,
                             envelope: try reader.envelope())
    }
}
