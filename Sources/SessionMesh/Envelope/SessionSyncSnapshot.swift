/// "The full state right now is …": a feature's whole state, with what it reflects.
///
/// `revision` grows with every state change of the engine that made it, so an older snapshot
/// from the same source can be recognised. `reflectedSequences` (beyond the seed, needed with
/// several writers) records, for every source peer, the last of its sequences folded into
/// `state`: a receiving engine moves its per-peer baselines there and re-applies what the
/// snapshot does not reflect.
public struct SessionSyncSnapshot<State: Sendable>: Sendable {
    /// Who made it, in which session; `sequence` is the maker's last issued sequence.
    public var metadata: SessionSyncMetadata
    /// The maker's state revision; strictly increasing per maker.
    public var revision: UInt64
    /// For every source peer id, the highest sequence of that peer `state` reflects
    /// (all of that peer's events up to and including it, none after it).
    public var reflectedSequences: [String: UInt64]
    /// The feature's state.
    public var state: State

    /// Creates a snapshot. `reflectedSequences` defaults to empty: a snapshot that claims to
    /// reflect no events (a receiver re-applies everything it holds on top of it).
    public init(
        metadata: SessionSyncMetadata,
        revision: UInt64,
        reflectedSequences: [String: UInt64] = [:],
        state: State
    ) {
        self.metadata = metadata
        self.revision = revision
        self.reflectedSequences = reflectedSequences
        self.state = state
    }
}

extension SessionSyncSnapshot: Equatable where State: Equatable {}
extension SessionSyncSnapshot: Hashable where State: Hashable {}
extension SessionSyncSnapshot: Codable where State: Codable {}
