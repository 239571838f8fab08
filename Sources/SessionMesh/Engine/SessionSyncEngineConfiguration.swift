/// Tuning of a ``SessionSyncEngine``: memory bounds, payload type names and the id source.
///
/// Every bound keeps the engine's memory constant however long a session runs.
public struct SessionSyncEngineConfiguration: Sendable {
    /// How many recent `eventID`s are remembered for deduplication (at least 1; default 1024).
    /// Older events are still recognised as duplicates by their per-peer sequence.
    public var dedupMemory: Int
    /// How many recently applied events (local and remote) are kept to re-apply on top of an
    /// adopted snapshot that does not reflect them (at least 0; default 1024). A snapshot that
    /// would need an event older than this history is refused as stale.
    public var historyLimit: Int
    /// The most source peers one session may have (default 256); a new one beyond it throws
    /// ``SessionSyncError/tooManyPeers(limit:)``.
    public var maxPeers: Int
    /// `payloadType` of this engine's events; `nil` means the event type's name.
    public var eventPayloadType: String?
    /// `payloadType` of this engine's snapshots; `nil` means the state type's name.
    public var statePayloadType: String?
    /// Where event and snapshot ids come from.
    public var eventIDs: SessionEventIDGenerator

    /// Creates a configuration; every parameter has a production default.
    public init(
        dedupMemory: Int = 1024,
        historyLimit: Int = 1024,
        maxPeers: Int = 256,
        eventPayloadType: String? = nil,
        statePayloadType: String? = nil,
        eventIDs: SessionEventIDGenerator = SessionEventIDGenerator()
    ) {
        self.dedupMemory = max(1, dedupMemory)
        self.historyLimit = max(0, historyLimit)
        self.maxPeers = max(1, maxPeers)
        self.eventPayloadType = eventPayloadType
        self.statePayloadType = statePayloadType
        self.eventIDs = eventIDs
    }
}
