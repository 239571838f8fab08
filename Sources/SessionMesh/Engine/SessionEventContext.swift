/// What the reducer knows about the event it is applying.
public struct SessionEventContext: Sendable, Hashable {
    /// The event's identity: source, sequence, causal timestamp.
    public var metadata: SessionSyncMetadata
    /// `true` when the event was submitted on this peer.
    public var isLocal: Bool
    /// `true` when the event is re-applied on top of an adopted snapshot (it was applied before,
    /// on the state the snapshot replaced). A pure reducer can ignore this.
    public var isReplay: Bool

    /// Creates a context.
    public init(metadata: SessionSyncMetadata, isLocal: Bool, isReplay: Bool = false) {
        self.metadata = metadata
        self.isLocal = isLocal
        self.isReplay = isReplay
    }
}
