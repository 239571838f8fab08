import NIOCore
import SessionMesh

/// `snapshot.publish` (0x0102) request body, binary:
///
/// ```
/// +------------------+---------------------------------+
/// | target str       | snapshot (SessionWireCodec)     |
/// +------------------+---------------------------------+
/// ```
///
/// `target`: a full or short device ID, or empty for every paired device.
public struct MeshSnapshotPublishRequest: Sendable, Equatable {
    /// Device ID of the one peer to publish to, or empty for all.
    public var target: String
    /// The snapshot; a lower revision than the slot's is not stored.
    public var snapshot: AnySessionSyncSnapshot

    /// Creates a request.
    public init(target: String = "", snapshot: AnySessionSyncSnapshot) {
        self.target = target
        self.snapshot = snapshot
    }

    /// The binary body; `invalid-argument` when the snapshot is over
    /// `LocalAPIWireFormat.maximumMessageBytes` or the body over the 1 MiB one frame carries.
    public func encode() throws(LocalAPIErrorBody) -> ByteBuffer {
        var writer = LocalAPIBinaryWriter(operation: .snapshotPublish, capacity: 160 + snapshot.state.count)
        try writer.string(target, field: "target")
        let messageStart = writer.buffer.readableBytes
        try writer.message(.snapshot(snapshot), field: "snapshot")
        return try writer.requestBody(messageStart: messageStart,
                                      contents: "a \(snapshot.state.count)-byte state and the snapshot's other fields")
    }

    /// Reads a binary body; throws `bad-request` naming the field that is wrong.
    public static func decode(_ body: ByteBuffer) throws(LocalAPIErrorBody) -> MeshSnapshotPublishRequest {
        var reader = LocalAPIBinaryReader(body, operation: .snapshotPublish)
        let target = try reader.string("target")
        return MeshSnapshotPublishRequest(target: target, snapshot: try reader.snapshot())
    }
}
