// Delivery values the daemon and the local API share. The local API's events carry them as
// they are (`MeshReachabilityEvent.Reason`, `MeshSessionEvent.Change`); the raw values are
// the documented JSON strings (docs/LOCAL-API.md).

/// Why the reachability of a peer, or of a feature on it, changed.
public enum ReachabilityChangeReason: String, Codable, Sendable, Equatable, CaseIterable {
    /// The channel to the peer became active.
    case channelActive = "channel-active"
    /// The channel closed.
    case channelDown = "channel-down"
    /// The counterpart app attached on the peer (feature-level).
    case appAttached = "app-attached"
    /// The counterpart app detached on the peer (feature-level).
    case appDetached = "app-detached"
    /// The lease ran out without renewal.
    case leaseExpired = "lease-expired"
    /// Another member of the device set added the device (it is a member from now on).
    case deviceAdded = "device-added"
    /// The device set removed the device (here or at another member).
    case deviceRemoved = "device-removed"
}

/// What happened to a session directory entry.
public enum SessionChange: String, Codable, Sendable, Equatable {
    /// A session appeared.
    case announced
    /// Its owner or status changed.
    case updated
    /// It was closed (never revived by a stale slot).
    case closed
}

/// Limits on feature IDs, the names apps attach to.
public enum FeatureIDLimit {
    /// Longest feature ID in UTF-8 bytes (it must fit a one-byte length on the local API and a
    /// `str16` between daemons).
    public static let maximumBytes = 255
}
