import NIOCore
import SessionMesh

/// `snapshot.latest` (0x0104) reply body, binary:
///
/// ```
/// +------------------+---------------------------------+
/// | peer str         | snapshot (SessionWireCodec)     |
/// +------------------+---------------------------------+
/// ```
///
/// `peer` is the full device ID of the peer whose inbound slot held the snapshot.
public struct SnapshotLatestReply: Sendable, Equatable {
    /// Full device ID of the peer the snapshot came from.
    public var peer: String
    /// The newest snapshot received from `peer` for the feature (and session).
    public var snapshot: AnySessionSyncSnapshot

    /// Creates a reply.
    public init(peer: String, snapshot: AnySessionSyncSnapshot) {
        self.peer = peer
        self.snapshot = snapshot
    }

    /// The binary body.
    public func encode() throws(LocalAPIErrorBody) -> ByteBuffer {
        var writer = LocalAPIBinaryWriter(operation: .snapshotLatest, capacity: 160 + snapshot.state.count)
        try writer.string(peer, field: "peer")
        try writer.message(.snapshot(snapshot), field: "snapshot")
        return writer.buffer
    }

    /// Reads a binary body; throws `bad-request` naming the field that is wrong.
    public static func decode(_ body: ByteBuffer) throws(LocalAPIErrorBody) -> SnapshotLatestReply {
        var reader = LocalAPIBinaryReader(body, operation: .snapshotLatest)
        let peer = try reader.string("peer")
        return SnapshotLatestReply(peer: peer, snapshot: try reader.snapshot())
    }
}
