import Foundation

/// The per-feature sync engine: a value type that applies local and remote events through a
/// pure reducer, drops duplicates and stale input, detects gaps, and makes and adopts snapshots.
///
/// Both devices run an identical engine over an identical reducer. The engine never does I/O:
/// ``submitLocal(_:at:monotonicTimestamp:)`` returns the envelope to ship, ``receive(_:)`` and
/// ``applySnapshot(_:)`` say what happened, and the caller (an adapter) moves bytes.
///
/// Guarantees, each covered by a test:
/// - `sessionID`, `featureID`, `payloadType` and `protocolVersion` must match, else a
///   ``SessionSyncError`` naming the mismatch is thrown and nothing changes.
/// - Own echoes, repeated `eventID`s and older sequences are ``SessionSyncReceiveResult/duplicate(_:)``;
///   memory for this is bounded (``SessionSyncEngineConfiguration/dedupMemory``).
/// - Per source peer, only the next expected sequence applies; a jump ahead gives
///   ``SessionSyncReceiveResult/snapshotRequired(expectedSequence:receivedSequence:)``.
/// - Adopting a snapshot moves every per-peer baseline to what the snapshot reflects and
///   re-applies the engine's recent events it does not reflect, so no applied event is lost.
public struct SessionSyncEngine<State, Event, Reducer, ConflictPolicy>: Sendable
where
    State: Sendable, Event: Sendable,
    Reducer: SessionSyncReducer, Reducer.State == State, Reducer.Event == Event,
    ConflictPolicy: SessionConflictPolicy, ConflictPolicy.State == State, ConflictPolicy.Event == Event
{
    /// One applied (or policy-ignored) event kept for re-application after a snapshot.
    @usableFromInline
    struct HistoryEntry: Sendable {
        @usableFromInline var metadata: SessionSyncMetadata
        @usableFromInline var event: Event
        @usableFromInline var isLocal: Bool

        @inlinable
        init(metadata: SessionSyncMetadata, event: Event, isLocal: Bool) {
            self.metadata = metadata
            self.event = event
            self.isLocal = isLocal
        }
    }

    /// The session this engine belongs to.
    public let sessionID: UUID
    /// The feature this engine syncs.
    public let featureID: String
    /// This device.
    public let localPeer: SessionPeer
    /// The `payloadType` of envelopes this engine makes and accepts.
    public let eventPayloadType: String
    /// The `payloadType` of snapshots this engine makes and accepts.
    public let statePayloadType: String
    /// The current state.
    @inlinable public var state: State { _state }
    /// Grows by at least one with every state change (local event, accepted remote event,
    /// adopted snapshot); carried by snapshots this engine makes.
    @inlinable public var revision: UInt64 { _revision }
    /// The last sequence this engine issued for its own events (0 before the first).
    @inlinable public var localSequence: UInt64 { _localSequence }
    /// For every remote source peer, the last sequence applied or ignored (the baseline: the
    /// next expected sequence is one more).
    @inlinable public var lastSequenceByPeerID: [String: UInt64] { _lastSequenceByPeerID }
    /// Metadata of the most recently applied event or adopted snapshot.
    @inlinable public var lastAppliedMetadata: SessionSyncMetadata? { _lastAppliedMetadata }

    // Stored state. `@usableFromInline` so the hot paths can be `@inlinable` and specialised
    // for the feature's concrete types in the caller's module (no generic metadata lookups).
    @usableFromInline var _state: State
    @usableFromInline var _revision: UInt64 = 0
    @usableFromInline var _localSequence: UInt64 = 0
    @usableFromInline var _lastSequenceByPeerID: [String: UInt64] = [:]
    @usableFromInline var _lastAppliedMetadata: SessionSyncMetadata?
    @usableFromInline let reducer: Reducer
    @usableFromInline let conflictPolicy: ConflictPolicy
    @usableFromInline let configuration: SessionSyncEngineConfiguration
    @usableFromInline var eventIDs: SessionEventIDGenerator
    @usableFromInline var recentEventIDs: Set<UUID> = []
    @usableFromInline var recentEventIDOrder: BoundedRing<UUID>
    @usableFromInline var history: BoundedRing<HistoryEntry>
    @usableFromInline var adoptedRevisionBySource: [String: UInt64] = [:]

    /// Creates an engine at `initialState`, revision 0, with no events seen.
    ///
    /// - Parameters:
    ///   - sessionID: the session instance both peers agree on.
    ///   - featureID: the feature (filters envelopes of other features).
    ///   - localPeer: this device; its `id` becomes `sourcePeerID` of everything sent.
    ///   - initialState: the state before any event.
    ///   - reducer: the feature's pure reducer.
    ///   - conflictPolicy: the feature's filter for remote events.
    ///   - configuration: memory bounds, payload type names, id source.
    public init(
        sessionID: UUID,
        featureID: String,
        localPeer: SessionPeer,
        initialState: State,
        reducer: Reducer,
        conflictPolicy: ConflictPolicy,
        configuration: SessionSyncEngineConfiguration = SessionSyncEngineConfiguration()
    ) {
        self.sessionID = sessionID
        self.featureID = featureID
        self.localPeer = localPeer
        self._state = initialState
        self.reducer = reducer
        self.conflictPolicy = conflictPolicy
        self.configuration = configuration
        self.eventPayloadType = configuration.eventPayloadType ?? String(describing: Event.self)
        self.statePayloadType = configuration.statePayloadType ?? String(describing: State.self)
        self.eventIDs = configuration.eventIDs
        self.recentEventIDOrder = BoundedRing(capacity: configuration.dedupMemory)
        self.history = BoundedRing(capacity: configuration.historyLimit)
    }

    /// The baseline of every source peer, this one included: what a snapshot made now reflects.
    @inlinable
    public var reflectedSequences: [String: UInt64] {
        var result = _lastSequenceByPeerID
        if _localSequence > 0 { result[localPeer.id] = _localSequence }
        return result
    }

    /// Applies a local event and returns the envelope to send to the peers.
    ///
    /// Local events bypass the conflict policy. If the reducer throws, no sequence is consumed
    /// and ``SessionSyncError/reducerFailed(eventID:reason:)`` is thrown (see
    /// ``SessionSyncReducer`` for why a reducer must throw before it mutates).
    @inlinable
    public mutating func submitLocal(
        _ event: Event, at timestamp: Date, monotonicTimestamp: TimeInterval? = nil
    ) throws -> SessionSyncEnvelope<Event> {
        guard _localSequence < .max else { throw SessionSyncError.sequenceExhausted(peerID: localPeer.id) }
        let metadata = SessionSyncMetadata(
            sessionID: sessionID, featureID: featureID, sourcePeerID: localPeer.id,
            eventID: eventIDs.next(), sequence: _localSequence + 1, causalTimestamp: timestamp,
            monotonicTimestamp: monotonicTimestamp, payloadType: eventPayloadType)
        do {
            try reducer.reduce(state: &_state, event: event, context: SessionEventContext(metadata: metadata, isLocal: true))
        } catch {
            throw SessionSyncError.reducerFailed(eventID: metadata.eventID, reason: String(describing: error))
        }
        _localSequence = metadata.sequence
        _revision = Self.saturatingIncrement(_revision)
        _lastAppliedMetadata = metadata
        remember(metadata.eventID)
        history.append(HistoryEntry(metadata: metadata, event: event, isLocal: true))
        return SessionSyncEnvelope(metadata: metadata, payload: event)
    }

    /// Decides what to do with an envelope from a peer, and applies it when it is new and in order.
    ///
    /// - Throws: a ``SessionSyncError`` when session, feature, payload type or protocol version
    ///   do not match, when the reducer throws, or when too many peers appear.
    @inlinable
    public mutating func receive(_ envelope: SessionSyncEnvelope<Event>) throws -> SessionSyncReceiveResult<State> {
        let metadata = envelope.metadata
        try validate(metadata, payloadType: eventPayloadType)
        if metadata.sourcePeerID == localPeer.id || recentEventIDs.contains(metadata.eventID) {
            return .duplicate(_state)
        }
        let baseline = _lastSequenceByPeerID[metadata.sourcePeerID]
        if baseline == nil && _lastSequenceByPeerID.count >= configuration.maxPeers {
            throw SessionSyncError.tooManyPeers(limit: configuration.maxPeers)
        }
        let last = baseline ?? 0
        if metadata.sequence <= last { return .duplicate(_state) }
        // Here last < metadata.sequence ≤ UInt64.max, so last + 1 cannot overflow.
        if metadata.sequence != last + 1 {
            return .snapshotRequired(expectedSequence: last + 1, receivedSequence: metadata.sequence)
        }
        let applied = try Self.applyRemote(
            envelope.payload, metadata: metadata, to: &_state, isReplay: false,
            reducer: reducer, policy: conflictPolicy, lastApplied: _lastAppliedMetadata)
        _lastSequenceByPeerID[metadata.sourcePeerID] = metadata.sequence
        remember(metadata.eventID)
        history.append(HistoryEntry(metadata: metadata, event: envelope.payload, isLocal: false))
        guard applied else { return .ignored(_state) }
        _revision = Self.saturatingIncrement(_revision)
        _lastAppliedMetadata = metadata
        return .applied(_state)
    }

    /// Runs the conflict policy and the reducer for a remote event on `target`, in place.
    /// Returns whether it applied; throws `reducerFailed` if the reducer throws.
    ///
    /// Static, with everything passed in, so that no copy of `self` (which would share the
    /// state's storage and force a full copy of it on mutation) is alive while `target`
    /// (usually `self.state`) is mutated.
    @inlinable
    static func applyRemote(
        _ event: Event, metadata: SessionSyncMetadata, to target: inout State, isReplay: Bool,
        reducer: Reducer, policy: ConflictPolicy, lastApplied: SessionSyncMetadata?
    ) throws -> Bool {
        guard accepts(event, metadata: metadata, on: target, isReplay: isReplay, policy: policy, lastApplied: lastApplied) else { return false }
        do {
            try reducer.reduce(state: &target, event: event, context: SessionEventContext(metadata: metadata, isLocal: false, isReplay: isReplay))
        } catch {
            throw SessionSyncError.reducerFailed(eventID: metadata.eventID, reason: String(describing: error))
        }
        return true
    }

    /// Asks the conflict policy. A separate function so the context (which shares the state's
    /// storage) is gone before the reducer mutates the state in place.
    @inlinable
    static func accepts(_ event: Event, metadata: SessionSyncMetadata, on target: State, isReplay: Bool, policy: ConflictPolicy, lastApplied: SessionSyncMetadata?) -> Bool {
        policy.shouldApply(event: event, context: SessionConflictContext(
            state: target, metadata: metadata, lastAppliedMetadata: lastApplied, isReplay: isReplay))
    }

    /// `value + 1`, or `value` at `UInt64.max`: a revision never wraps back to a small number.
    @inlinable
    static func saturatingIncrement(_ value: UInt64) -> UInt64 { value == .max ? value : value + 1 }

    /// Throws unless `metadata` belongs to this engine's session, feature, payload type and version.
    @inlinable
    func validate(_ metadata: SessionSyncMetadata, payloadType: String) throws {
        guard metadata.protocolVersion == SessionSyncProtocol.currentVersion else {
            throw SessionSyncError.protocolVersionMismatch(expected: SessionSyncProtocol.currentVersion, received: metadata.protocolVersion)
        }
        guard metadata.sessionID == sessionID else {
            throw SessionSyncError.sessionMismatch(expected: sessionID, received: metadata.sessionID)
        }
        guard metadata.featureID == featureID else {
            throw SessionSyncError.featureMismatch(expected: featureID, received: metadata.featureID)
        }
        guard metadata.payloadType == payloadType else {
            throw SessionSyncError.payloadTypeMismatch(expected: payloadType, received: metadata.payloadType)
        }
    }

    /// Adds an id to the bounded dedup memory, forgetting the oldest when full.
    @inlinable
    mutating func remember(_ eventID: UUID) {
        guard recentEventIDs.insert(eventID).inserted else { return }
        if let evicted = recentEventIDOrder.append(eventID) {
            recentEventIDs.remove(evicted)
        }
    }

    /// How many event ids the dedup memory holds now (never more than the configured bound).
    @inlinable public var rememberedEventIDCount: Int { recentEventIDs.count }
    /// How many events the re-apply history holds now (never more than the configured bound).
    @inlinable public var historyCount: Int { history.count }
}
