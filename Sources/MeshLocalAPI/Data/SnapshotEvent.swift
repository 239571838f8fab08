import NIOCore
import SessionMesh

/// `snapshot` (0x0181) event body, binary:
///
/// ```
/// +------------------+---------------------------------+
/// | from str         | snapshot (SessionWireCodec)     |
/// +------------------+---------------------------------+
/// ```
///
/// Sent when a peer's snapshot replaced the inbound slot (a higher revision), and as the answer
/// to `snapshot.request`.
public struct SnapshotEvent: Sendable, Equatable {
    /// Full device ID of the peer the snapshot came from.
    public var from: String
    /// The snapshot.
    public var snapshot: AnySessionSyncSnapshot

    /// Creates an event.
    public init(from: String, snapshot: AnySessionSyncSnapshot) {
        self.from = from
        self.snapshot = snapshot
    }

    /// The binary body.
    public func encode() throws(LocalAPIErrorBody) -> ByteBuffer {
        var writer = LocalAPIBinaryWriter(operation: .snapshotEvent, capacity: 160 + snapshot.state.count)
        try writer.string(from, field: "from")
        try writer.message(.snapshot(snapshot), field: "snapshot")
        return writer.buffer
    }

    /// Reads a binary body; throws `bad-request` naming the field that is wrong.
    public static func decode(_ body: ByteBuffer) throws(LocalAPIErrorBody) -> SnapshotEvent {
        var reader = LocalAPIBinaryReader(body, operation: .snapshotEvent)
        let from = try reader.string("from")
        return SnapshotEvent(from: from, snapshot: try reader.snapshot())
    }
}
