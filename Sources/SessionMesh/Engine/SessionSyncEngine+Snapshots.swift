import Foundation

extension SessionSyncEngine {
    /// Makes a snapshot of the current state, for a peer that asked or for the latest-state slot.
    ///
    /// `metadata.sequence` is the last local sequence issued (a snapshot consumes none);
    /// `reflectedSequences` is ``reflectedSequences``. Mutating only because it draws an id.
    public mutating func makeSnapshot(at timestamp: Date) -> SessionSyncSnapshot<State> {
        let metadata = SessionSyncMetadata(
            sessionID: sessionID, featureID: featureID, sourcePeerID: localPeer.id,
            eventID: eventIDs.next(), sequence: localSequence, causalTimestamp: timestamp,
            payloadType: statePayloadType)
        return SessionSyncSnapshot(metadata: metadata, revision: revision, reflectedSequences: reflectedSequences, state: state)
    }

    /// Adopts a peer's snapshot when it brings something new, keeping every event this engine
    /// applied that the snapshot does not reflect.
    ///
    /// Refused as ``SessionSyncSnapshotResult/staleIgnored(_:currentRevision:)`` when its revision
    /// is not above one already adopted from the same source, when it reflects nothing this engine
    /// has not applied, or when re-applying would need events older than the history holds.
    /// On adoption, per-peer baselines become the larger of the engine's and the snapshot's
    /// (including this peer's own sequence, so a restarted peer never reuses a sequence).
    /// - Throws: a ``SessionSyncError`` on a session, feature, payload type or version mismatch,
    ///   or when the reducer throws while re-applying (the engine is then unchanged).
    public mutating func applySnapshot(_ snapshot: SessionSyncSnapshot<State>) throws -> SessionSyncSnapshotResult<State> {
        let metadata = snapshot.metadata
        try validate(metadata, payloadType: statePayloadType)
        let stale = SessionSyncSnapshotResult<State>.staleIgnored(state, currentRevision: revision)
        if let adopted = adoptedRevisionBySource[metadata.sourcePeerID], snapshot.revision <= adopted {
            return stale
        }
        let current = reflectedSequences
        let bringsNews = snapshot.reflectedSequences.contains { peer, sequence in sequence > (current[peer] ?? 0) }
        guard bringsNews else { return stale }
        let newPeers = snapshot.reflectedSequences.keys.filter { current[$0] == nil && $0 != localPeer.id }.count
        if lastSequenceByPeerID.count + newPeers > configuration.maxPeers {
            throw SessionSyncError.tooManyPeers(limit: configuration.maxPeers)
        }

        // Events this engine applied that the snapshot does not reflect, in their original order.
        var replay: [HistoryEntry] = []
        var replayCount: [String: UInt64] = [:]
        history.forEach { entry in
            let source = entry.metadata.sourcePeerID
            if entry.metadata.sequence > (snapshot.reflectedSequences[source] ?? 0) {
                replay.append(entry)
                replayCount[source, default: 0] += 1
            }
        }
        for (peer, have) in current {
            let reflected = snapshot.reflectedSequences[peer] ?? 0
            if have > reflected && replayCount[peer, default: 0] != have - reflected { return stale }
        }

        var next = snapshot.state
        for entry in replay {
            if entry.isLocal {
                do {
                    try reducer.reduce(state: &next, event: entry.event, context: SessionEventContext(metadata: entry.metadata, isLocal: true, isReplay: true))
                } catch {
                    throw SessionSyncError.reducerFailed(eventID: entry.metadata.eventID, reason: String(describing: error))
                }
            } else {
                _ = try Self.applyRemote(
                    entry.event, metadata: entry.metadata, to: &next, isReplay: true,
                    reducer: reducer, policy: conflictPolicy, lastApplied: lastAppliedMetadata)
            }
        }

        _state = next
        for (peer, sequence) in snapshot.reflectedSequences {
            if peer == localPeer.id {
                _localSequence = max(_localSequence, sequence)
            } else {
                _lastSequenceByPeerID[peer] = max(_lastSequenceByPeerID[peer] ?? 0, sequence)
            }
        }
        adoptedRevisionBySource[metadata.sourcePeerID] = snapshot.revision
        _revision = Self.saturatingIncrement(max(_revision, snapshot.revision))
        _lastAppliedMetadata = replay.last?.metadata ?? metadata
        return .applied(state)
    }
}

extension SessionSyncEngine {
    /// The events this engine holds that a peer whose snapshot reflects `reflectedSequences`
    /// lacks, oldest first: what to send that peer so it catches up event by event.
    ///
    /// With several writers, snapshots alone can deadlock: two groups of peers may each hold
    /// events the other lacks, learned from snapshots rather than as events, so neither can
    /// adopt the other's snapshot without losing something. The holder of the events breaks
    /// that: after ``applySnapshot(_:)`` (whatever its outcome), send the peer these envelopes.
    /// Per source peer, only an unbroken run starting right after the peer's baseline is
    /// returned (anything else would only make the peer ask for a snapshot again); the
    /// receiving engine applies them in order and deduplicates the rest. Pass the snapshot's
    /// maker as `peerID` to leave out its own events (it never lacks them, and with reordering
    /// an older snapshot of it often arrives late).
    public func eventsMissing(from reflectedSequences: [String: UInt64], forPeer peerID: String? = nil) -> [SessionSyncEnvelope<Event>] {
        var next: [String: UInt64] = [:]
        var missing: [SessionSyncEnvelope<Event>] = []
        history.forEach { entry in
            let source = entry.metadata.sourcePeerID
            guard source != peerID else { return }
            let baseline = reflectedSequences[source] ?? 0
            guard baseline < .max else { return }
            let expected = next[source] ?? baseline + 1
            guard entry.metadata.sequence == expected, expected < .max else { return }
            next[source] = expected + 1
            missing.append(SessionSyncEnvelope(metadata: entry.metadata, payload: entry.event))
        }
        return missing
    }
}
