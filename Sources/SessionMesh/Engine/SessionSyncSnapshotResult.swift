/// What ``SessionSyncEngine/applySnapshot(_:)`` did with a snapshot.
public enum SessionSyncSnapshotResult<State: Sendable>: Sendable {
    /// The snapshot was adopted (and the engine's own unreflected events re-applied on top);
    /// the associated state is the new state.
    case applied(State)
    /// The snapshot was refused: older than one already adopted from its source, reflecting
    /// nothing new, or needing events the engine's bounded history no longer holds. The state
    /// and the engine's current revision are returned unchanged.
    case staleIgnored(State, currentRevision: UInt64)
}

extension SessionSyncSnapshotResult: Equatable where State: Equatable {}

extension SessionSyncSnapshotResult {
    /// The state after the call, whichever the outcome.
    public var state: State {
        switch self {
        case let .applied(state), let .staleIgnored(state, _): state
        }
    }
}
