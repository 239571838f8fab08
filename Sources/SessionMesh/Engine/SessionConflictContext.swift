/// What the conflict policy knows when it decides whether a remote event applies.
public struct SessionConflictContext<State: Sendable>: Sendable {
    /// The state the event would be applied to.
    public var state: State
    /// The incoming event's metadata.
    public var metadata: SessionSyncMetadata
    /// The metadata of the event (or snapshot) most recently applied, if any.
    public var lastAppliedMetadata: SessionSyncMetadata?
    /// `true` when the event is re-evaluated on top of an adopted snapshot.
    public var isReplay: Bool

    /// Creates a context.
    public init(state: State, metadata: SessionSyncMetadata, lastAppliedMetadata: SessionSyncMetadata?, isReplay: Bool = false) {
        self.state = state
        self.metadata = metadata
        self.lastAppliedMetadata = lastAppliedMetadata
        self.isReplay = isReplay
    }
}
