/// What ``SessionSyncEngine/receive(_:)`` did with an envelope.
public enum SessionSyncReceiveResult<State: Sendable>: Sendable {
    /// The event was new, in order, and accepted; the associated state is the new state.
    case applied(State)
    /// The event was seen before (same `eventID`, an older sequence, or an own echo); nothing changed.
    case duplicate(State)
    /// The conflict policy refused the event; the state is unchanged but the sender's sequence
    /// advanced, so the next event from it is in order.
    case ignored(State)
    /// The sender's sequence skipped ahead: at least one event was missed. Nothing was applied;
    /// ask the sender for a snapshot (``SessionSnapshotRequest``) instead of gap-filling.
    case snapshotRequired(expectedSequence: UInt64, receivedSequence: UInt64)
}

extension SessionSyncReceiveResult: Equatable where State: Equatable {}

extension SessionSyncReceiveResult {
    /// The state after the call, or `nil` for ``snapshotRequired(expectedSequence:receivedSequence:)``.
    public var state: State? {
        switch self {
        case let .applied(state), let .duplicate(state), let .ignored(state): state
        case .snapshotRequired: nil
        }
    }
}
