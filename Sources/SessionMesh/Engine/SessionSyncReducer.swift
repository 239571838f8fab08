/// A feature's pure state transition: given the state and an event, mutate the state.
///
/// Must be deterministic and free of side effects: both devices apply the same events with the
/// same reducer and must reach the same state. The engine reduces its state *in place* (a copy
/// per event would cost a full copy of the state each time), so a reducer that throws must do
/// so before mutating anything; the error surfaces as
/// ``SessionSyncError/reducerFailed(eventID:reason:)`` and the event's sequence is not consumed.
/// Prefer refusing events in the ``SessionConflictPolicy``.
/// For sticky terminal states, guard at the top of `reduce` *and* mirror the rule in the
/// ``SessionConflictPolicy``.
public protocol SessionSyncReducer<State, Event>: Sendable {
    /// The feature's state.
    associatedtype State: Sendable
    /// The feature's event.
    associatedtype Event: Sendable
    /// Applies `event` to `state`.
    func reduce(state: inout State, event: Event, context: SessionEventContext) throws
}

/// A pre-application filter for remote events; returning `false` gives
/// ``SessionSyncReceiveResult/ignored(_:)`` (the sequence still advances).
///
/// Runs before the reducer for every remote event, including events re-applied after a
/// snapshot; local events bypass it. Must be deterministic, like the reducer.
public protocol SessionConflictPolicy<State, Event>: Sendable {
    /// The feature's state.
    associatedtype State: Sendable
    /// The feature's event.
    associatedtype Event: Sendable
    /// Whether `event` should be applied to `context.state`.
    func shouldApply(event: Event, context: SessionConflictContext<State>) -> Bool
}

/// A conflict policy that applies every event: the right choice when the reducer alone decides.
public struct AcceptAllConflictPolicy<State: Sendable, Event: Sendable>: SessionConflictPolicy {
    /// Creates the policy.
    public init() {}
    /// Always `true`.
    public func shouldApply(event: Event, context: SessionConflictContext<State>) -> Bool { true }
}
