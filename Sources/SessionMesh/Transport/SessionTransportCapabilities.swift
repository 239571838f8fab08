/// A static description of what a transport can do; adapters check it to fail fast on
/// delivery modes the transport cannot honour.
public struct SessionTransportCapabilities: Sendable, Hashable, Codable {
    /// Immediate delivery to a reachable peer (``SessionDeliveryMode/realtimeBestEffort``).
    public var supportsRealtime: Bool
    /// Queued delivery that survives the peer being away (``SessionDeliveryMode/reliableEventually``).
    public var supportsDurableQueue: Bool
    /// A last-value-wins slot per feature (``SessionDeliveryMode/latestSnapshot`` and
    /// `latestPeerSnapshot(featureID:)`).
    public var supportsLatestStateReplacement: Bool
    /// The request/acknowledgement path (``SessionDeliveryMode/snapshotRequest``, ``SessionDeliveryMode/acknowledgement``).
    public var supportsSnapshotRequests: Bool
    /// Largest payload (event or state bytes) the transport accepts, or `nil` for no stated limit.
    public var maximumPayloadBytes: Int?

    /// Creates a description.
    public init(
        supportsRealtime: Bool,
        supportsDurableQueue: Bool,
        supportsLatestStateReplacement: Bool,
        supportsSnapshotRequests: Bool,
        maximumPayloadBytes: Int? = nil
    ) {
        self.supportsRealtime = supportsRealtime
        self.supportsDurableQueue = supportsDurableQueue
        self.supportsLatestStateReplacement = supportsLatestStateReplacement
        self.supportsSnapshotRequests = supportsSnapshotRequests
        self.maximumPayloadBytes = maximumPayloadBytes
    }

    /// Everything supported, no payload limit (the in-memory test transports).
    public static let all = SessionTransportCapabilities(
        supportsRealtime: true, supportsDurableQueue: true,
        supportsLatestStateReplacement: true, supportsSnapshotRequests: true)

    /// Whether `mode` can be honoured.
    public func supports(_ mode: SessionDeliveryMode) -> Bool {
        switch mode {
        case .realtimeBestEffort: supportsRealtime
        case .reliableEventually: supportsDurableQueue
        case .latestSnapshot: supportsLatestStateReplacement
        case .snapshotRequest, .acknowledgement: supportsSnapshotRequests
        }
    }
}
