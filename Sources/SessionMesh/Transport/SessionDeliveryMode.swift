/// A hint about delivery semantics, not a specific wire primitive; a transport maps it onto
/// what it has (the daemon: datagram path, durable queue, latest-state slot).
public enum SessionDeliveryMode: String, Sendable, Hashable, Codable, CaseIterable {
    /// Deliver now if possible; falls back to durable delivery if the peer is asleep.
    case realtimeBestEffort
    /// Durability matters more than latency: queued and retried until the peer acknowledges.
    case reliableEventually
    /// Last value wins: a newer publication replaces an older undelivered one.
    case latestSnapshot
    /// The request path: "send me a snapshot".
    case snapshotRequest
    /// The reply/acknowledgement path.
    case acknowledgement
}
