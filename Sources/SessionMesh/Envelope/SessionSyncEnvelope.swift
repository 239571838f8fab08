/// "This happened": one event of a feature, with its identity.
///
/// The typed form used by the engine and the reducer. Transports carry the erased
/// ``AnySessionSyncEnvelope``; convert with ``AnySessionSyncEnvelope/init(_:coding:)`` and
/// ``AnySessionSyncEnvelope/typed(as:coding:)``.
public struct SessionSyncEnvelope<Payload: Sendable>: Sendable {
    /// Who sent it, in which session, at which sequence.
    public var metadata: SessionSyncMetadata
    /// The feature's event.
    public var payload: Payload

    /// Wraps an event with its metadata.
    public init(metadata: SessionSyncMetadata, payload: Payload) {
        self.metadata = metadata
        self.payload = payload
    }
}

extension SessionSyncEnvelope: Equatable where Payload: Equatable {}
extension SessionSyncEnvelope: Hashable where Payload: Hashable {}
extension SessionSyncEnvelope: Codable where Payload: Codable {}
