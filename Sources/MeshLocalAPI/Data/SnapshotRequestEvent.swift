import NIOCore
import SessionMesh

/// `snapshot.request` (0x0182) event body, binary:
///
/// ```
/// +------------------+-------------------------------------------------+
/// | from str         | request (SessionWireCodec SessionSnapshotRequest) |
/// +------------------+-------------------------------------------------+
/// ```
///
/// A peer's app asks this app for a snapshot; answer with `snapshot.publish` targeted at `from`.
public struct SnapshotRequestEvent: Sendable, Equatable {
    /// Full device ID of the asking peer.
    public var from: String
    /// What is asked for.
    public var request: SessionSnapshotRequest

    /// Creates an event.
    public init(from: String, request: SessionSnapshotRequest) {
        self.from = from
        self.request = request
    }

    /// The binary body.
    public func encode() throws(LocalAPIErrorBody) -> ByteBuffer {
        var writer = LocalAPIBinaryWriter(operation: .snapshotRequestEvent, capacity: 128)
        try writer.string(from, field: "from")
        try writer.message(.snapshotRequest(request), field: "request")
        return writer.buffer
    }

    /// Reads a binary body; throws `bad-request` naming the field that is wrong.
    public static func decode(_ body: ByteBuffer) throws(LocalAPIErrorBody) -> SnapshotRequestEvent {
        var reader = LocalAPIBinaryReader(body, operation: .snapshotRequestEvent)
        let from = try reader.string("from")
        return SnapshotRequestEvent(from: from, request: try reader.snapshotRequest())
    }
}
